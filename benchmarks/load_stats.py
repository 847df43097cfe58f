"""The load tool's accounting: what one instruction went through, as read from the frames a client
received, whether anything was lost or duplicated, and the latency figures. Pure: standard library
and benchmarks.metrics only (no Django, no sockets), so every rule here is tested on plain frames.

Frames are the dicts of the channel websocket protocol (README, "Websockets"); times are seconds
on one monotonic clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from benchmarks.metrics import percentile

FINISHED = frozenset({"done", "failed", "stopped"})
# The latencies reported, each measured from the moment the instruction was sent.
MEASURES = ("ack", "first_delta", "done")


@dataclass
class Instruction:
    """One instruction as one client saw it. Times are seconds after `sent`; None if it never came."""

    client: int
    index: int
    client_id: str
    text: str
    ack: float | None = None
    first_delta: float | None = None
    done: float | None = None
    status: str = ""  # the task's last status seen live: done, failed, stopped ("" if none)
    task: int | None = None
    turn: int | None = None
    error: str = ""  # the code of an `error` frame the server answered it with (e.g. rate_limited)
    sent_at: float | None = None  # when it was sent, on the tool's clock (for what overlapped what)
    streamed: str = ""  # the deltas of its task, joined
    deltas: list[str] = field(default_factory=list)  # the same, one text per delta frame
    # Deltas of its task that arrived before the task frame that names it (so not in `streamed`).
    early: str = ""
    reply: str | None = None  # the assistant reply delivered live
    # In the final state (the channel's stored events, replayed by resync):
    stored_instructions: int = 0
    stored_replies: int = 0

    @property
    def lost(self) -> bool:
        """Refused with an error frame is not lost: the person was told. Anything else missing is:
        no acknowledgement, no end, or a reply not shown live or not stored."""
        if self.error:
            return False
        return (
            self.ack is None
            or self.status not in FINISHED
            or self.stored_instructions == 0
            or (self.status == "done" and (self.reply is None or self.stored_replies == 0))
        )

    @property
    def duplicated(self) -> bool:
        return self.stored_instructions > 1 or self.stored_replies > 1


def is_user_message(frame: dict[str, Any], text: str) -> bool:
    message = frame.get("message") or {}
    return frame.get("type") == "message" and message.get("role") == "user" and message.get("content") == text


def follow(item: Instruction, frames: Sequence[dict[str, Any]], arrived: Sequence[float], sent: float) -> Instruction:
    """Fill in what the frames received after sending `item` (at `sent`) say about it: its
    acknowledgement (the `message` frame carrying its user message), its task (the `task` frames
    of that turn), the first `delta` of that task, the task's end, and its reply."""
    item.sent_at = sent
    # Deltas of tasks not yet named: one of them may turn out to be this instruction's task.
    unnamed: dict[Any, str] = {}
    for frame, at in zip(frames, arrived):
        kind = frame.get("type")
        if kind == "delta" and (item.task is None or frame.get("task") != item.task):
            unnamed[frame.get("task")] = unnamed.get(frame.get("task"), "") + (frame.get("text") or "")
        if item.ack is None:
            if is_user_message(frame, item.text):
                item.ack, item.turn = at - sent, frame["message"].get("turn")
            elif kind == "error" and not item.error:
                item.error = str(frame.get("code") or "error")
            continue
        if kind == "task" and frame.get("turn") == item.turn:
            if item.task is None:
                item.early = unnamed.get(frame.get("id"), "")
            item.task = frame.get("id")
            item.status = frame.get("status") or ""
            if item.status in FINISHED and item.done is None:
                item.done = at - sent
        elif kind == "delta" and item.task is not None and frame.get("task") == item.task:
            if item.first_delta is None:
                item.first_delta = at - sent
            item.streamed += frame.get("text") or ""
            item.deltas.append(frame.get("text") or "")
        elif kind == "message" and (frame.get("message") or {}).get("role") == "assistant":
            if frame["message"].get("turn") == item.turn and item.reply is None:
                item.reply = frame["message"].get("content") or ""
    return item


# How a reply's stream differed from its stored text (stream_difference), in the order checked.
STREAM_KINDS = {
    "before_task_frame": "deltas came before the task frame (the tool's accounting)",
    "end_missing": "the end missing",
    "extra_at_end": "something extra at the end",
    "repeated": "text streamed again",
    "middle_missing": "text missing in the middle",
    "other": "other",
}
# The reply's opening: seen again further into the stream, a second attempt streamed from the start.
OPENING_CHARS = 40


def stream_difference(item: Instruction) -> str | None:
    """Which of STREAM_KINDS the live stream of a stored reply is, or None if it is the reply (or
    there is no stream or no reply to compare). Checked in STREAM_KINDS' order: the first that fits."""
    streamed, reply = item.streamed, item.reply
    if reply is None or not (streamed or item.early) or streamed == reply:
        return None
    if item.early and item.early + streamed == reply:
        return "before_task_frame"
    if reply.startswith(streamed):
        return "end_missing"
    if streamed.startswith(reply):
        return "extra_at_end"
    opening = reply[:OPENING_CHARS]
    if opening and streamed.find(opening, 1) > 0:
        return "repeated"
    if len(streamed) < len(reply) and in_order(item.deltas or [streamed], reply):
        return "middle_missing"
    return "other"


def in_order(pieces: Sequence[str], text: str) -> bool:
    """Is every piece found in `text`, each after the one before (text left out between them)?"""
    at = 0
    for piece in pieces:
        found = text.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def stream_example(item: Instruction, kind: str, chars: int = 80) -> dict[str, Any]:
    """What to look at in one differing stream: where it first parts from the reply, with a little
    of each around that point."""
    streamed, reply = item.early + item.streamed if kind == "before_task_frame" else item.streamed, item.reply or ""
    at = next((n for n, (a, b) in enumerate(zip(streamed, reply)) if a != b), min(len(streamed), len(reply)))
    return {
        "kind": kind,
        "client": item.client,
        "task": item.task,
        "streamed_chars": len(item.streamed),
        "early_chars": len(item.early),
        "reply_chars": len(reply),
        "deltas": len(item.deltas),
        "differs_at": at,
        "streamed_there": streamed[max(0, at - 20) : at + chars],
        "reply_there": reply[max(0, at - 20) : at + chars],
    }


def stream_differences(items: Iterable[Instruction], *, examples: int = 3) -> tuple[dict[str, int], list[dict]]:
    """How many streams differ in each way, and the first few of each kind, described."""
    kinds: Counter = Counter()
    described: list[dict] = []
    for item in items:
        kind = stream_difference(item)
        if kind is None:
            continue
        kinds[kind] += 1
        if kinds[kind] <= examples:
            described.append(stream_example(item, kind))
    return {kind: kinds[kind] for kind in STREAM_KINDS if kinds[kind]}, described


def live_duplicates(frames: Iterable[dict[str, Any]]) -> int:
    """Messages a socket was sent live more than once: each extra delivery of a message id, or of a
    seq, counts one (a person would see the message twice)."""
    ids: Counter = Counter()
    seqs: Counter = Counter()
    for frame in frames:
        if frame.get("seq") is not None and frame.get("type") != "session":
            seqs[frame["seq"]] += 1
        if frame.get("type") == "message":
            ids[(frame.get("message") or {}).get("id")] += 1
    return sum(n - 1 for n in ids.values()) + sum(n - 1 for n in seqs.values())


def stored_events(replayed: Iterable[dict[str, Any]], *, after: int, through: int) -> tuple[list[dict], list[int]]:
    """The stored events with after < seq <= through, one per seq, from what a resync sent (live
    frames may be mixed in); and the seqs in that range that never came (the replay is incomplete)."""
    by_seq = {frame["seq"]: frame for frame in replayed if isinstance(frame.get("seq"), int) and frame.get("type") != "session"}
    events = [by_seq[seq] for seq in range(after + 1, through + 1) if seq in by_seq]
    missing = [seq for seq in range(after + 1, through + 1) if seq not in by_seq]
    return events, missing


def count_stored(items: Iterable[Instruction], events: Iterable[dict[str, Any]]) -> None:
    """Set each item's stored_instructions (user messages with its text) and stored_replies
    (assistant messages of its turn) from one channel's stored events."""
    items = list(items)
    users: Counter = Counter()
    replies: Counter = Counter()
    for event in events:
        message = event.get("message") or {}
        if event.get("type") != "message":
            continue
        if message.get("role") == "user":
            users[message.get("content")] += 1
        elif message.get("role") == "assistant" and message.get("content"):
            replies[message.get("turn")] += 1
    for item in items:
        item.stored_instructions = users[item.text]
        item.stored_replies = replies[item.turn] if item.turn is not None else 0


def summarize(values: Iterable[float | None]) -> dict[str, float | int | None]:
    """p50, p95 and max in milliseconds of the values that exist, and how many there were."""
    present = [value * 1000 for value in values if value is not None]
    if not present:
        return {"n": 0, "p50": None, "p95": None, "max": None}
    return {
        "n": len(present),
        "p50": round(percentile(present, 50), 1),
        "p95": round(percentile(present, 95), 1),
        "max": round(max(present), 1),
    }


def most_at_once(intervals: Iterable[tuple[float, float]]) -> int:
    """The most intervals (start, end) open at one instant; one that ends as another starts does
    not overlap it."""
    moments = sorted((when, step) for start, end in intervals for when, step in ((start, 1), (end, -1)))
    open_now = most = 0
    for _, step in moments:  # at equal times the end (-1) sorts first
        open_now += step
        most = max(most, open_now)
    return most


def streaming(items: Iterable[Instruction]) -> list[tuple[float, float]]:
    """Each reply's time on the wire as its person saw it: from its first delta to its end."""
    return [
        (item.sent_at + item.first_delta, item.sent_at + item.done)
        for item in items
        if item.sent_at is not None and item.first_delta is not None and item.done is not None
    ]


def in_flight(items: Iterable[Instruction]) -> list[tuple[float, float]]:
    """Each instruction from the moment it was sent to its end."""
    return [(item.sent_at, item.sent_at + item.done) for item in items if item.sent_at is not None and item.done is not None]


def stream_figures(items: Sequence[Instruction]) -> dict[str, float | int | None]:
    """Concurrency reached, and the pace the replies came at (what the server's paced provider was
    set to, as measured here: a realistic run streams about 1,000 characters over about 10 s)."""
    chars = [len(item.reply) for item in items if item.reply]
    seconds = [end - start for start, end in streaming(items)]
    return {
        "most_streaming_at_once": most_at_once(streaming(items)),
        "most_in_flight_at_once": most_at_once(in_flight(items)),
        "reply_chars_p50": round(percentile(chars, 50)) if chars else None,
        "stream_seconds_p50": round(percentile(seconds, 50), 2) if seconds else None,
    }


@dataclass
class Counts:
    sent: int = 0
    acknowledged: int = 0
    done: int = 0
    failed: int = 0  # finished failed or stopped: the person saw an error instead of a reply
    rejected: int = 0  # answered with an error frame (e.g. rate_limited) and not stored
    lost: int = 0
    duplicated: int = 0  # instructions stored or answered more than once
    live_duplicates: int = 0  # messages a socket was sent twice
    incomplete_replays: int = 0  # clients whose resync did not replay every stored event
    stream_mismatches: int = 0  # replies whose streamed deltas differ from the stored text (informational)
    stream_kinds: dict[str, int] = field(default_factory=dict)  # the same, by STREAM_KINDS

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.live_duplicates or self.failed or self.rejected or self.incomplete_replays)


def count(items: Sequence[Instruction], *, live_duplicates: int = 0, incomplete_replays: int = 0) -> Counts:
    kinds, _ = stream_differences(items)
    return Counts(
        sent=len(items),
        acknowledged=sum(item.ack is not None for item in items),
        done=sum(item.status == "done" for item in items),
        failed=sum(item.status in {"failed", "stopped"} for item in items),
        rejected=sum(bool(item.error) and item.ack is None for item in items),
        lost=sum(item.lost for item in items),
        duplicated=sum(item.duplicated for item in items),
        live_duplicates=live_duplicates,
        incomplete_replays=incomplete_replays,
        stream_mismatches=sum(kinds.values()),
        stream_kinds=kinds,
    )


@dataclass
class Report:
    clients: int
    instructions: int
    counts: Counts
    latency_ms: dict[str, dict]
    seconds: float  # from the first instruction sent to the last one finished
    throughput: float  # instructions done per second over `seconds`
    conditions: dict[str, Any] = field(default_factory=dict)
    streams: dict[str, Any] = field(default_factory=dict)  # stream_figures
    stream_examples: list[dict] = field(default_factory=list)  # a few differing streams of each kind
    # CPU and memory of each process watched (benchmarks.processes): per role, and per process.
    processes: dict[str, list[dict]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.counts.ok}


def build_report(
    items: Sequence[Instruction],
    *,
    clients: int,
    instructions: int,
    seconds: float,
    live_duplicates: int = 0,
    incomplete_replays: int = 0,
    conditions: dict[str, Any] | None = None,
    processes: dict[str, list[dict]] | None = None,
) -> Report:
    counts = count(items, live_duplicates=live_duplicates, incomplete_replays=incomplete_replays)
    latency = {measure: summarize(getattr(item, measure) for item in items) for measure in MEASURES}
    return Report(
        clients=clients,
        instructions=instructions,
        counts=counts,
        latency_ms=latency,
        seconds=round(seconds, 2),
        throughput=round(counts.done / seconds, 2) if seconds > 0 else 0.0,
        conditions=conditions or {},
        streams=stream_figures(items),
        stream_examples=stream_differences(items)[1],
        processes=processes or {},
    )


LABELS = {"ack": "acknowledged", "first_delta": "first delta", "done": "done"}


def render(report: Report) -> str:
    """The table a person reads after a run."""

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:,.0f}"

    ramp = report.conditions.get("ramp_s")
    spread = f"; first ones spread over {ramp:g} s" if ramp else ""
    lines = [
        f"{report.clients} clients x {report.instructions} instructions, each sent after the previous one finished{spread}",
        "",
        f"{'from instruction to':<22}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}{'n':>7}",
    ]
    for measure in MEASURES:
        row = report.latency_ms[measure]
        lines.append(f"{LABELS[measure]:<22}{ms(row['p50']):>10}{ms(row['p95']):>10}{ms(row['max']):>10}{row['n']:>7}")
    c = report.counts
    lines += [
        "",
        f"sent {c.sent}, acknowledged {c.acknowledged}, done {c.done}, failed {c.failed}, rejected {c.rejected}",
        f"lost {c.lost}, duplicated {c.duplicated}, delivered twice live {c.live_duplicates}, "
        f"incomplete replays {c.incomplete_replays}, streams differing from the reply {c.stream_mismatches}",
    ]
    if c.stream_kinds:
        lines.append("  streams differing: " + ", ".join(f"{STREAM_KINDS[kind]} {n}" for kind, n in c.stream_kinds.items()))
    lines += [
        f"{report.seconds:,.1f} s from the first instruction to the last end, {report.throughput:.2f} replies done per second",
    ]
    streams = report.streams
    if streams:
        pace = (
            f"; replies of {streams['reply_chars_p50']:,} characters streamed over {streams['stream_seconds_p50']:.1f} s (p50)"
            if streams.get("reply_chars_p50") is not None and streams.get("stream_seconds_p50") is not None else ""
        )
        lines.append(
            f"at most {streams['most_streaming_at_once']} replies streaming at once, "
            f"{streams['most_in_flight_at_once']} instructions in flight{pace}"
        )
    lines += render_processes(report.processes.get("by_role", []))
    lines.append("OK" if c.ok else "FAILED: something was lost, duplicated, failed or refused")
    return "\n".join(lines)


def render_processes(rows: Sequence[dict]) -> list[str]:
    """The CPU and memory table: one row per kind of process (benchmarks.processes.by_role)."""
    if not rows:
        return []
    lines = [
        "",
        f"{'process':<24}{'n':>3}{'CPU s':>9}{'CPU % mean':>12}{'CPU % peak':>12}{'RSS MB each':>13}{'threads':>9}",
    ]
    for row in rows:
        lines.append(
            f"{row['role']:<24}{row['processes']:>3}{row['cpu_seconds']:>9.1f}{row['cpu_percent_mean']:>12.0f}"
            f"{row['cpu_percent_peak']:>12.0f}{row['rss_mb_max_per_process']:>13.0f}{row['threads_max']:>9}"
        )
    lines.append("(CPU % of one core; mean over the run, summed over a kind's processes; peak of any one process in a 1 s interval)")
    lines.append("")
    return lines
