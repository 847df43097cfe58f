"""The app's builder as a benchmark strategy: what it counts as a fold, and what it times."""

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from benchmarks import report
from benchmarks.conversations import generate_conversation
from benchmarks.metrics import Request
from benchmarks.office_strategy import BuilderStrategy, request_of
from benchmarks.strategies import FullHistory, model_calls, tasks_by_turn
from sessions import context


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
    # The budget check counts, from the prompt sent, what the builder's report says it used.
    assert all(r.budgeted_chars == r.details["report"]["budget"]["used"] for r in requests)
    assert max(r.budgeted_chars for r in requests) <= strategy.policy.memory_chars + strategy.policy.summary_chars + \
        strategy.policy.detailed_chars + strategy.policy.recall_chars


# The budget check: what the builder's layer budgets cover, counted from the prompt it sends.

BUDGET = 6_000


def built_prompt(extra: int = 0) -> context.Prompt:
    """A prompt whose memory, summary, window (with a kept tail and tool calls) and tail add up to
    BUDGET characters and `extra` more; the system layer and the current task come on top."""
    memory = f"{context.MEMORY_HEADER}\n- [fact] The launch is on Friday."
    summary = f"{context.SUMMARY_HEADER}\nTasks 1–3: the venue was chosen."
    call = {"name": "read_document", "args": {"title": "Plan"}, "id": "call-1"}
    window = [HumanMessage("Draft the plan."), AIMessage("", tool_calls=[call]), ToolMessage("Plan text.", tool_call_id="call-1")]
    window += [AIMessage("Here it is."), HumanMessage(f"{context.RECALL_HEADER}\n## Task 1 of this conversation")]
    # Forty short exchanges: many messages, so role prefixes and blank lines would add up.
    window += [HumanMessage(f"Question {i}?") if i % 2 else AIMessage(f"Answer {i}.") for i in range(40)]
    used = len(memory) + len(summary) + sum(context.message_chars(m) for m in window)
    tail = HumanMessage(f"{context.RECALL_HEADER}\n" + "r" * (BUDGET - used - len(context.RECALL_HEADER) - 1 + extra))
    current = [HumanMessage("Now send it to Sam, with the long attachment: " + "x" * 5_000)]
    return context.Prompt(
        system=("You are Mina, marketing lead. " * 20, memory, summary),
        messages=(*window, tail, *current),
        window_end=len(window) - 1,
        report={},
    )


class PromptStrategy:
    """Sends the same built prompt at every model call, held to BUDGET."""

    layer_budget_chars = BUDGET

    def __init__(self, prompt: context.Prompt) -> None:
        self.prompt = prompt
        self.name = "builder (fold_batch 4)"

    def start(self, conversation) -> None: ...

    def request(self, turn: int, instruction: str) -> Request:
        return request_of(self.prompt)

    def step(self, turn: int, upto: int) -> Request:
        return request_of(self.prompt)

    def finish_task(self, turn: int) -> None: ...


def budget_target(prompt: context.Prompt) -> dict:
    run = report.run_size(generate_conversation(10, language="en", seed=0), [FullHistory, lambda: PromptStrategy(prompt)])
    return next(t for t in report.evaluate_targets([run], ["builder (fold_batch 4)"]) if t["key"] == "budget")


def test_a_prompt_at_its_budget_passes_the_budget_target_however_many_messages_it_has():
    prompt = built_prompt()
    request = request_of(prompt)
    assert request.budgeted_chars == BUDGET
    # Rendered for the benchmark (roles, blank lines), the same layers are longer than what is sent.
    assert sum(len(request.layers[name]) for name in ("memory", "summary", "recent", "recalled")) > BUDGET + 200

    target = budget_target(prompt)
    assert target["status"] == "PASS"
    assert f"largest {BUDGET:,} of {BUDGET:,} chars" in target["detail"]


def test_a_prompt_one_character_over_its_budget_fails_the_budget_target():
    target = budget_target(built_prompt(extra=1))
    assert target["status"] == "FAIL"
    assert "up to 1 (N=10)" in target["detail"]
