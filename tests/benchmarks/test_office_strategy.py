"""The app's builder as a benchmark strategy: what it counts as a fold, and what it times."""

import pytest

from benchmarks.conversations import generate_conversation
from benchmarks.metrics import LAYER_ORDER, SEPARATOR, common_prefix_chars
from benchmarks.office_strategy import BuilderStrategy
from benchmarks.strategies import tasks_by_turn


@pytest.mark.django_db
def test_every_request_not_counted_as_after_a_fold_begins_with_the_previous_requests_window():
    conversation = generate_conversation(30, language="en", seed=0)
    tasks = tasks_by_turn(conversation)
    strategy = BuilderStrategy(fold_batch=4)
    strategy.start(conversation)
    requests = []
    try:
        for turn in range(1, 31):
            requests.append(strategy.request(turn, tasks[turn].instruction))
            strategy.finish_task(turn)
    finally:
        strategy.close()

    for previous, request in zip(requests, requests[1:]):
        # The previous request up to the end of its detailed window: system, memory, summary, recent.
        front = SEPARATOR.join(previous.layers[name] for name in LAYER_ORDER[:4] if previous.layers[name])
        if not request.folded:
            assert common_prefix_chars(previous.text, request.text) >= len(front)
    reports = [r.details["report"] for r in requests]
    folds = [turn for turn, r in enumerate(requests, start=1) if r.folded]
    moves = [t for t in range(2, 31) if reports[t - 1]["fold_through"] != reports[t - 2]["fold_through"]]
    assert set(moves) <= set(folds), "a request where tasks leave the window counts as after a fold"
    assert all(r.build_seconds > 0 for r in requests)
