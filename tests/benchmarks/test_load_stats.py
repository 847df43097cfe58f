"""The load tool's accounting (benchmarks.load_stats): what counts as acknowledged, lost or
duplicated, and the figures in the table. Plain frames, no server."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.load_stats import (
    Instruction,
    build_report,
    count,
    count_stored,
    follow,
    in_flight,
    live_duplicates,
    most_at_once,
    render,
    stored_events,
    stream_difference,
    stream_differences,
    stream_figures,
    streaming,
    summarize,
)

TEXT = "Load run x, client 1, instruction 1: outline the launch plan."


def user(text: str = TEXT, *, turn: int = 1, seq: int = 1, id: str = "m1") -> dict:
    return {"type": "message", "message": {"id": id, "role": "user", "content": text, "turn": turn}, "seq": seq}


def reply(content: str = "Paced reply.", *, turn: int = 1, seq: int = 5, id: str = "m2") -> dict:
    return {"type": "message", "message": {"id": id, "role": "assistant", "content": content, "turn": turn}, "seq": seq}


def task(status: str, *, turn: int = 1, seq: int, id: int = 7) -> dict:
    return {"type": "task", "id": id, "turn": turn, "status": status, "seq": seq}


def delta(text: str, *, task_id: int = 7) -> dict:
    return {"type": "delta", "task": task_id, "coworker": "pace", "text": text}


def a_whole_instruction() -> list[dict]:
    return [
        user(),
        task("queued", seq=2),
        task("running", seq=3),
        delta("Paced "),
        delta("reply."),
        reply(seq=4),
        task("done", seq=5),
    ]


def followed(frames: list[dict], *, sent: float = 10.0, step: float = 0.1) -> Instruction:
    arrived = [sent + step * (n + 1) for n in range(len(frames))]
    return follow(Instruction(client=1, index=1, client_id="c1", text=TEXT), frames, arrived, sent)


def test_it_times_acknowledgement_first_delta_and_done_from_the_moment_of_sending():
    item = followed(a_whole_instruction())
    assert item.ack == pytest.approx(0.1)
    assert item.first_delta == pytest.approx(0.4)
    assert item.done == pytest.approx(0.7)
    assert (item.task, item.turn, item.status) == (7, 1, "done")
    assert item.streamed == item.reply == "Paced reply."


def test_only_this_instructions_own_user_message_acknowledges_it():
    frames = [user("Someone else's instruction", turn=4, id="other"), *a_whole_instruction()]
    item = followed(frames)
    assert item.ack == pytest.approx(0.2)
    assert item.turn == 1


def test_deltas_and_task_frames_of_another_turn_are_not_this_instructions():
    frames = [user(), task("done", turn=2, seq=2, id=99), delta("not ours", task_id=99), task("queued", seq=3)]
    item = followed(frames)
    assert item.status == "queued" and item.done is None and item.first_delta is None


def test_an_instruction_acknowledged_but_never_finished_is_lost():
    item = followed(a_whole_instruction()[:4])  # the socket stopped receiving after the first delta
    count_stored([item], [user(), reply(seq=4)])
    assert item.ack is not None and item.lost


def test_an_instruction_never_acknowledged_is_lost():
    item = followed([])
    assert item.lost


def test_a_finished_instruction_absent_from_the_stored_events_is_lost():
    item = followed(a_whole_instruction())
    count_stored([item], [reply(seq=4)])  # the reply is stored, the instruction is not
    assert item.lost


def test_a_reply_shown_live_but_not_stored_is_lost():
    item = followed(a_whole_instruction())
    count_stored([item], [user()])
    assert item.lost


def test_a_reply_stored_but_never_shown_live_is_lost():
    frames = [frame for frame in a_whole_instruction() if frame.get("message", {}).get("role") != "assistant"]
    item = followed(frames)
    count_stored([item], [user(), reply(seq=4)])
    assert item.lost


def test_a_complete_instruction_is_neither_lost_nor_duplicated():
    item = followed(a_whole_instruction())
    count_stored([item], [user(), reply(seq=4)])
    assert (item.stored_instructions, item.stored_replies) == (1, 1)
    assert not item.lost and not item.duplicated


def test_an_instruction_stored_twice_or_answered_twice_is_duplicated():
    twice = followed(a_whole_instruction())
    count_stored([twice], [user(seq=1), user(seq=2, id="m1-again"), reply(seq=4)])
    answered_twice = followed(a_whole_instruction())
    count_stored([answered_twice], [user(), reply(seq=4), reply(seq=6, id="m3")])
    assert twice.duplicated and answered_twice.duplicated


def test_a_refused_instruction_is_counted_as_refused_not_lost():
    frames = [{"type": "error", "code": "rate_limited", "detail": "Try again in 20 seconds."}]
    item = followed(frames)
    counts = count([item])
    assert item.error == "rate_limited" and not item.lost
    assert (counts.rejected, counts.lost) == (1, 0)
    assert not counts.ok


def test_a_message_delivered_twice_live_counts_once_per_extra_delivery():
    frames = [{"type": "session", "seq": 3, "messages": []}, user(seq=4), user(seq=4), user(seq=4), task("done", seq=5)]
    assert live_duplicates(frames) == 4  # the message id twice extra, and its seq twice extra
    assert live_duplicates(a_whole_instruction()) == 0


def test_stored_events_keep_one_per_seq_and_name_the_seqs_a_replay_left_out():
    replayed = [user(seq=3), delta("live, not stored"), user(seq=3), reply(seq=5), task("done", seq=7)]
    events, missing = stored_events(replayed, after=2, through=7)
    assert [event["seq"] for event in events] == [3, 5, 7]
    assert missing == [4, 6]


def test_summarize_gives_milliseconds_and_skips_what_never_came():
    figures = summarize([0.010, 0.020, None, 0.030, 0.040])
    assert figures == {"n": 4, "p50": 25.0, "p95": 38.5, "max": 40.0}
    assert summarize([None]) == {"n": 0, "p50": None, "p95": None, "max": None}


@given(st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), min_size=1, max_size=50))
def test_summarize_orders_its_figures(values):
    figures = summarize(values)
    assert figures["n"] == len(values)
    assert figures["p50"] <= figures["p95"] <= figures["max"] + 0.05


def test_the_report_counts_what_a_person_would_see_and_renders_the_table():
    good = followed(a_whole_instruction())
    count_stored([good], [user(), reply(seq=4)])
    lost = Instruction(client=2, index=1, client_id="c2", text="never acknowledged")
    report = build_report([good, lost], clients=2, instructions=1, seconds=2.0)
    c = report.counts
    assert (c.sent, c.acknowledged, c.done, c.lost, c.duplicated) == (2, 1, 1, 1, 0)
    assert not c.ok
    assert report.throughput == 0.5
    table = render(report)
    assert "acknowledged" in table and "first delta" in table
    assert "lost 1, duplicated 0" in table
    assert table.splitlines()[-1].startswith("FAILED")
    assert report.as_json()["ok"] is False


def test_a_clean_report_says_ok():
    good = followed(a_whole_instruction())
    count_stored([good], [user(), reply(seq=4)])
    report = build_report([good], clients=1, instructions=1, seconds=1.0)
    assert report.counts.ok and render(report).splitlines()[-1] == "OK"


def test_a_stream_that_differs_from_the_stored_reply_is_reported_but_not_a_failure():
    frames = a_whole_instruction()
    frames[4] = delta("reply?")
    item = followed(frames)
    count_stored([item], [user(), reply(seq=4)])
    counts = count([item])
    assert counts.stream_mismatches == 1 and counts.ok


REPLY = "Paced reply to: outline the launch plan. Working through it step by step. Working through it step by step."


def streamed_as(*texts: str, before_task: tuple[str, ...] = ()) -> Instruction:
    """An instruction whose reply REPLY was streamed as these deltas (some before its task frame)."""
    frames = [user(), *(delta(text) for text in before_task), task("running", seq=2), *(delta(text) for text in texts), reply(REPLY, seq=3), task("done", seq=4)]
    return followed(frames)


def test_a_stream_equal_to_its_reply_differs_in_no_way():
    assert stream_difference(streamed_as(REPLY[:30], REPLY[30:])) is None


def test_a_stream_whose_end_never_came_is_told_from_one_with_something_extra_at_the_end():
    assert stream_difference(streamed_as(REPLY[:30], REPLY[30:60])) == "end_missing"
    assert stream_difference(streamed_as(REPLY, " And more.")) == "extra_at_end"


def test_a_second_attempt_streaming_the_reply_again_reads_as_repeated():
    # The first attempt stalled after 50 characters; the one that took over streamed it all.
    assert stream_difference(streamed_as(REPLY[:50], REPLY[:30], REPLY[30:])) == "repeated"


def test_a_delta_lost_in_the_middle_reads_as_missing_in_the_middle():
    assert stream_difference(streamed_as(REPLY[:20], REPLY[45:])) == "middle_missing"


def test_deltas_before_the_task_frame_are_the_tools_accounting_not_the_stream():
    item = streamed_as(REPLY[40:], before_task=(REPLY[:40],))
    assert item.early == REPLY[:40] and item.streamed == REPLY[40:]
    assert stream_difference(item) == "before_task_frame"


def test_deltas_of_another_task_before_the_task_frame_are_not_this_ones():
    frames = [user(), delta("Something else.", task_id=8), task("running", seq=2), delta(REPLY), reply(REPLY, seq=3)]
    assert followed(frames).early == "" and stream_difference(followed(frames)) is None


def test_the_report_counts_each_kind_of_difference_keeps_examples_and_prints_them():
    items = [streamed_as(REPLY[:30]), streamed_as(REPLY[:30]), streamed_as(REPLY[:50], REPLY), streamed_as(REPLY)]
    kinds, examples = stream_differences(items, examples=1)
    assert kinds == {"end_missing": 2, "repeated": 1}
    assert [example["kind"] for example in examples] == ["end_missing", "repeated"]
    assert examples[1]["differs_at"] == 50 and examples[1]["streamed_there"].startswith(REPLY[30:50] + "Paced")
    report = build_report(items, clients=4, instructions=1, seconds=1.0)
    assert report.counts.stream_mismatches == 3 and report.counts.stream_kinds == kinds
    assert "the end missing 2, text streamed again 1" in render(report)
    assert report.as_json()["stream_examples"][0]["kind"] == "end_missing"


def test_most_at_once_counts_the_overlap_and_an_end_meeting_a_start_is_not_one():
    assert most_at_once([]) == 0
    assert most_at_once([(0, 10), (1, 11), (2, 12)]) == 3
    assert most_at_once([(0, 1), (1, 2), (2, 3)]) == 1  # one after another, never two at once
    assert most_at_once([(0, 10), (1, 2), (3, 4), (3.5, 5)]) == 3


def timed(client: int, *, sent: float, first_delta: float | None, done: float | None, reply: str | None = "x" * 1000) -> Instruction:
    item = Instruction(client=client, index=1, client_id=f"c{client}", text="t", sent_at=sent)
    item.ack, item.first_delta, item.done, item.reply = 0.05, first_delta, done, reply
    return item


def test_streams_run_from_first_delta_to_done_and_in_flight_from_sending_to_done():
    items = [
        timed(1, sent=0.0, first_delta=1.0, done=11.0),
        timed(2, sent=0.0, first_delta=12.0, done=22.0),  # queued behind: sent together, never streamed together
        timed(3, sent=5.0, first_delta=None, done=None, reply=None),  # never answered: in neither
    ]
    assert streaming(items) == [(1.0, 11.0), (12.0, 22.0)]
    assert in_flight(items) == [(0.0, 11.0), (0.0, 22.0)]
    figures = stream_figures(items)
    assert figures["most_streaming_at_once"] == 1
    assert figures["most_in_flight_at_once"] == 2
    assert figures["reply_chars_p50"] == 1000
    assert figures["stream_seconds_p50"] == 10.0  # the pace the paced provider was set to


def test_following_an_instruction_notes_when_it_was_sent():
    assert followed(a_whole_instruction(), sent=42.0).sent_at == 42.0


def test_the_table_says_how_many_streamed_at_once_at_what_pace_and_each_process_s_cpu_and_memory():
    items = [timed(n, sent=0.0, first_delta=1.0 + n / 10, done=11.0 + n / 10) for n in range(1, 4)]
    for item in items:
        item.status, item.stored_instructions, item.stored_replies = "done", 1, 1
    processes = {
        "by_role": [
            {"role": "worker (celery)", "processes": 1, "cpu_seconds": 12.5, "cpu_percent_mean": 62.0,
             "cpu_percent_peak": 98.0, "rss_mb_max_per_process": 310.0, "rss_mb_total": 310.0, "threads_max": 112},
        ]
    }
    report = build_report(items, clients=3, instructions=1, seconds=11.3, processes=processes)
    table = render(report)
    assert "at most 3 replies streaming at once, 3 instructions in flight" in table
    assert "replies of 1,000 characters streamed over 10.0 s (p50)" in table
    assert "0.27 replies done per second" in table
    [row] = [line for line in table.splitlines() if line.startswith("worker (celery)")]
    assert row.split() == ["worker", "(celery)", "1", "12.5", "62", "98", "310", "112"]
    assert report.as_json()["processes"] == processes
    assert table.splitlines()[-1] == "OK"
