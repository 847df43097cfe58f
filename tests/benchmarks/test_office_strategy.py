"""The app's builder as a benchmark strategy: what it counts as a fold, and what it times."""

import pytest

from benchmarks.conversations import generate_conversation
from benchmarks.office_strategy import BuilderStrategy
from benchmarks.strategies import model_calls, tasks_by_turn


@pytest.mark.django_db
def test_between_folds_every_model_call_begins_with_the_whole_previous_one():
    conversation = generate_conversation(30, language="en", seed=0)
    tasks = tasks_by_turn(conversation)
    strategy = BuilderStrategy(fold_batch=4)
    strategy.start(conversation)
    requests = []
    try:
        for turn in range(1, 31):
            for step, upto in enumerate(model_calls(tasks[turn])):
                requests.append(strategy.step(turn, upto) if step else strategy.request(turn, tasks[turn].instruction))
            strategy.finish_task(turn)
    finally:
        strategy.close()

    whole = 0
    for previous, request in zip(requests, requests[1:]):
        report = request.details["report"]
        if request.folded:
            continue
        # A task that did not fit in full joins the window with its tool results digested:
        # its last call had them whole, so the prefix ends there (until the next fold).
        just_done = report["turn"] - 1
        if report["turn"] != previous.details["report"]["turn"] and report["plan"]["levels"].get(str(just_done)) != "full":
            continue
        assert request.text.startswith(previous.text), f"task {report['turn']}: the previous call is not all reused"
        whole += 1
    assert whole > len(requests) // 2
    assert any(r.details["report"]["layers"]["recent"]["kept_tails"] for r in requests), "tails were kept in place"
    reports = [r.details["report"] for r in requests]
    folds = [i for i, r in enumerate(requests) if r.folded]
    moves = [i for i in range(1, len(reports)) if reports[i]["fold_through"] != reports[i - 1]["fold_through"]]
    assert set(moves) <= set(folds), "a request where tasks leave the window counts as after a fold"
    assert all(r.build_seconds > 0 for r in requests)
