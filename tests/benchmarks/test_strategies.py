import io
import json
import time
from functools import cache

import pytest
from django.core.management import call_command

from benchmarks.conversations import Conversation, generate_conversation
from benchmarks.metrics import SEPARATOR, Request, estimate_tokens, where_found
from benchmarks.strategies import (
    FullHistory,
    HermesCompactor,
    _select,
    model_calls,
    render_message,
    render_record,
    render_task,
    render_user,
    tasks_by_turn,
)
from sessions.history import Record, TaskRecords, rebuild_messages
from benchmarks import report as bench_context
from sessions.policy import Policy


@cache
def conversation(n: int, language: str = "en") -> Conversation:
    return generate_conversation(n, language=language)


def drive(strategy, convo: Conversation) -> list[Request]:
    tasks = tasks_by_turn(convo)
    strategy.start(convo)
    requests = []
    for turn in range(1, convo.n_tasks + 1):
        requests.append(strategy.request(turn, tasks[turn].instruction))
        strategy.finish_task(turn)
    return requests


def test_a_rebuilt_message_renders_as_its_record_does():
    # The app's builder sends langchain messages; the baselines render records. Same text, same measure.
    records = conversation(20).records
    messages = rebuild_messages(records).messages
    assert [render_message(m) for m in messages] == [render_record(r) for r in records]


def test_a_tool_call_is_rendered_as_text():
    record = next(r for r in conversation(5).records if r.tool_calls)
    call = record.tool_calls[0]
    assert f"[tool {call.name} {{" in render_record(record)
    assert render_record(Record(id="n", previous=None, turn=1, role="notice", content="💡")) == ""


def test_the_full_history_grows_by_each_task_and_only_appends():
    convo = conversation(30)
    tasks = tasks_by_turn(convo)
    requests = drive(FullHistory(), convo)
    for turn, (before, after) in enumerate(zip(requests, requests[1:]), start=1):
        # Request n+1 begins with all of request n (its instruction opens task n in the history).
        assert after.text.startswith(before.text)
        # Linear growth: by task n's work, then the next instruction takes the current one's place.
        grown = after.chars - before.chars
        work = len(render_task(tasks[turn])) - len(render_user(tasks[turn].instruction))
        assert grown == work + len(SEPARATOR) + len(render_user(tasks[turn + 1].instruction))
    assert not any(request.folded for request in requests)
    assert all(where_found(requests[-1].layers, fact.needle) == "recent" for fact in convo.facts)


def test_a_task_makes_a_model_call_first_and_another_after_each_batch_of_tool_results():
    def task(*roles: str) -> TaskRecords:
        return TaskRecords(turn=1, records=tuple(Record(id=f"r{i}", previous=None, turn=1, role=role) for i, role in enumerate(roles)))

    # Two parallel calls answered together, then one more call, then the answer.
    assert model_calls(task("user", "assistant", "tool", "tool", "assistant", "tool", "assistant")) == [1, 4, 6]
    assert model_calls(task("user", "assistant")) == [1]
    assert model_calls(task("user", "assistant", "tool")) == [1, 3]  # interrupted after the result: one more call was due


def test_every_call_of_the_full_history_begins_with_the_whole_previous_one():
    convo = conversation(10)
    tasks = tasks_by_turn(convo)
    strategy = FullHistory()
    strategy.start(convo)
    previous = ""
    for turn in range(1, 11):
        for step, upto in enumerate(model_calls(tasks[turn])):
            request = strategy.step(turn, upto) if step else strategy.request(turn, tasks[turn].instruction)
            assert request.text.startswith(previous) and len(request.text) > len(previous)
            previous = request.text
        strategy.finish_task(turn)


def test_hermes_sends_everything_while_under_half_the_window():
    convo = conversation(40)
    full, hermes = drive(FullHistory(), convo), drive(HermesCompactor(), convo)
    assert [r.text for r in hermes] == [r.text for r in full]


def test_hermes_compacts_a_long_chinese_conversation_under_half_of_200k_tokens():
    # About a token a character: a Chinese conversation passes 100K tokens within 150 tasks.
    hermes = HermesCompactor()
    requests = drive(hermes, conversation(150, "zh"))
    assert hermes.compressions >= 1
    assert max(estimate_tokens(r.text) for r in requests) <= 100_000 * 1.02
    assert sum(r.folded for r in requests) == hermes.compressions


def small_hermes() -> HermesCompactor:
    return HermesCompactor(window_tokens=20_000, summary_min_tokens=200, summary_max_tokens=1_500)


def test_hermes_stays_under_its_threshold_and_keeps_the_last_20_messages_verbatim():
    convo = conversation(80)
    tasks = tasks_by_turn(convo)
    hermes = small_hermes()
    requests = drive(hermes, convo)
    assert hermes.compressions >= 3
    assert max(estimate_tokens(r.text) for r in requests) <= hermes.threshold_tokens * 1.05
    folded = [turn for turn, r in enumerate(requests, start=1) if r.folded]
    for turn in folded:
        history = [render_record(r) for t in range(1, turn) for r in tasks[t].records]
        recent = requests[turn - 1].layers["recent"]
        assert recent.endswith(SEPARATOR.join(history[-20:]))
        assert recent.startswith(SEPARATOR.join(history[:3]))  # the first three stay too
        assert requests[turn - 1].layers["summary"]


def test_hermes_summary_is_about_a_fifth_of_what_it_replaced_within_its_envelope():
    hermes = small_hermes()
    requests = drive(hermes, conversation(80))
    for request in requests:
        if request.layers["summary"]:
            assert estimate_tokens(request.layers["summary"]) <= 1_500 + 50  # the header


def test_hermes_summary_takes_first_sentences_before_tool_lines_and_thins_evenly():
    def said(turn: int, text: str) -> Record:
        return Record(id=f"u{turn}", previous=None, turn=turn, role="user", content=text)

    records = [said(i, f"First point {i}. Second point {i}.") for i in range(10)]
    records.append(Record(id="t", previous=None, turn=10, role="tool", content="Table row one\nTable row two", tool_call_id="x"))
    everything = _select([], records, budget_tokens=10_000)
    assert everything[0] == "First point 0." and "Table row one" in everything and "Second point 9." in everything

    # Too little room for every first sentence: a spread of them, the old summary included, in order.
    thin = _select(["an old summary line"], records, budget_tokens=30)
    assert thin[0] == "an old summary line"
    assert all(line.startswith("First point") for line in thin[1:])
    assert 3 <= len(thin) < 11
    assert int(thin[-1].split()[-1].rstrip(".")) >= 6  # reaches the later messages, not just the first few


def test_the_layer_budget_is_the_policy_sum():
    class Builder:
        policy = Policy(memory_chars=1_000, summary_chars=2_000, detailed_chars=3_000)

    expected = 6_000 + getattr(Builder.policy, "recall_chars", 0)
    assert bench_context.layer_budget(Builder()) == expected
    assert bench_context.layer_budget(FullHistory()) is None


class WindowBuilder:
    """A stand-in for the app's builder: the last 8 tasks, nothing else (no memory, no summary)."""

    def __init__(self, fold_batch: int) -> None:
        self.fold_batch = fold_batch
        self.name = f"builder_fb{fold_batch}"

    def start(self, convo: Conversation) -> None:
        self.tasks = tasks_by_turn(convo)
        self.window: list[str] = []

    def request(self, turn: int, instruction: str) -> Request:
        return self._build(turn, render_user(instruction))

    def step(self, turn: int, upto: int) -> Request:
        return self._build(turn, render_task(self.tasks[turn], upto))

    def _build(self, turn: int, current: str) -> Request:
        started = time.perf_counter()
        layers = {"system": "sys", "recent": SEPARATOR.join(self.window[-8:]), "current": current}
        return Request(layers, time.perf_counter() - started, folded=turn > 9)

    def finish_task(self, turn: int) -> None:
        self.window.append(render_task(self.tasks[turn]))


def test_the_targets_are_judged_on_the_builders_english_runs():
    factories = [FullHistory, lambda: WindowBuilder(1), lambda: WindowBuilder(4)]
    runs = [bench_context.run_size(conversation(n), factories) for n in (100, 200)]
    targets = {t["key"]: t for t in bench_context.evaluate_targets(runs, ["builder_fb1", "builder_fb4"])}
    assert targets["smaller"]["status"] == "PASS"  # 8 tasks against 100
    assert targets["facts"]["status"] == "FAIL"  # planted in tasks 20..60, long gone from the window
    assert "0%" in targets["facts"]["detail"]
    assert targets["build_time"]["status"] == "N/A"  # needs N=10 and N=1000
    assert targets["prefix"]["status"] == "N/A"  # every request after the warm-up folds


@pytest.mark.django_db
def test_it_runs_the_benchmark_and_writes_json(tmp_path):
    out = io.StringIO()
    # Two passes: the real builder must build the same prompts again (its times are the fastest of both).
    call_command(
        "bench_context", "--quick", "--language", "en", "--passes", "2", "--min-seconds", "0", "--out", str(tmp_path), stdout=out
    )
    printed = out.getvalue()
    assert "English, N=10" in printed and "English, N=50" in printed and "Targets" in printed
    assert "full_history" in printed and "hermes" in printed

    latest = json.loads((tmp_path / "latest.json").read_text(encoding="utf-8"))
    assert len(list(tmp_path.glob("bench_context-*.json"))) == 1
    assert latest["sizes"] == [10, 20, 50] and latest["languages"] == ["en"]
    assert {"generated_at", "seed", "builder_available", "cost_model", "runs", "targets"} <= latest.keys()
    assert latest["timing_passes"] == 2
    assert [run["tasks"] for run in latest["runs"]] == [10, 20, 50]
    for run in latest["runs"]:
        assert {"full_history", "hermes"} <= run["strategies"].keys()
        # A request per model call: each task's first, then one after each batch of its tool results.
        tasks = tasks_by_turn(conversation(run["tasks"])).values()
        calls = [(task.turn, step) for task in tasks for step in range(len(model_calls(task)))]
        assert len(calls) > run["tasks"]
        for summary in run["strategies"].values():
            assert {"chars", "smaller_than_full", "prefix_share_without_fold", "folds", "cost_units",
                    "cheaper_than_full", "build_ms", "facts", "per_request"} <= summary.keys()
            assert [(row["turn"], row["step"]) for row in summary["per_request"]] == calls
            assert set(summary["facts"]["locations"]) == {"memory", "summary", "recent", "recalled", "missing"}
    assert [t["key"] for t in latest["targets"]] == ["budget", "smaller", "prefix", "build_time", "facts"]
    if not latest["builder_available"]:
        assert "not available" in printed
        assert all(t["status"] == "N/A" for t in latest["targets"])


def test_it_refuses_sizes_that_are_not_task_counts(tmp_path):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("bench_context", "--sizes", "10,zero", "--out", str(tmp_path), stdout=io.StringIO())


class PassTimedBuilder(WindowBuilder):
    """Builds the same prompts every pass; its build times come from a script, one list per pass."""

    timed = True
    passes: list[list[float]] = []

    def start(self, convo: Conversation) -> None:
        super().start(convo)
        self.seconds = iter(PassTimedBuilder.passes.pop(0))

    def _build(self, turn: int, current: str) -> Request:
        built = super()._build(turn, current)
        return Request(built.layers, next(self.seconds), folded=built.folded)


def model_calls_in(convo: Conversation) -> int:
    return sum(len(model_calls(task)) for task in tasks_by_turn(convo).values())


def test_each_request_keeps_its_fastest_build_across_passes():
    # The machine slowed down during the first half of pass 1 and the second half of pass 2.
    calls = model_calls_in(conversation(10))
    half = calls // 2
    PassTimedBuilder.passes = [[0.009] * half + [0.004] * (calls - half), [0.004] * half + [0.008] * (calls - half)]
    run = bench_context.run_size(conversation(10), [FullHistory, lambda: PassTimedBuilder(4)], timing_passes=2)

    builder = run["strategies"]["builder_fb4"]
    assert builder["timing_passes"] == 2
    assert [round(row["build_ms"]) for row in builder["per_request"]] == [4] * calls
    assert round(builder["build_ms"]["p95"]) == 4


class ForgetfulBuilder(WindowBuilder):
    """Leaves out the fifth task's recent layer: the same number of requests, one prompt different."""

    def request(self, turn: int, instruction: str) -> Request:
        built = super().request(turn, instruction)
        if turn == 5:
            built.layers["recent"] = ""
        return built


def test_a_short_conversation_is_timed_over_more_passes_until_the_minimum_time_has_gone_by():
    # Ten requests pass in a moment, inside whatever slow stretch the machine is in.
    PassTimedBuilder.passes = [[0.001] * model_calls_in(conversation(10)) for _ in range(1_000)]
    run = bench_context.run_size(
        conversation(10), [FullHistory, lambda: PassTimedBuilder(4)], timing_passes=2, timing_seconds=0.2
    )

    assert run["strategies"]["builder_fb4"]["timing_passes"] > 2
    assert run["strategies"]["full_history"]["timing_passes"] == 1  # baselines are not timed


def test_a_builder_that_builds_different_prompts_on_another_pass_is_reported():
    first = bench_context.run_strategy(WindowBuilder(4), conversation(10))
    other = bench_context.run_strategy(ForgetfulBuilder(4), conversation(10))
    with pytest.raises(RuntimeError, match="not deterministic"):
        bench_context.keep_fastest_builds(first, other)
