"""Streamed text to a channel as `delta` events: batched by time and size, more coarsely the more
streams this process relays at once. Imports no models; sends through office.events.

Every delta costs the same whatever its length: a group_send here (four Redis round trips), a
message through Redis, and Daphne relaying it to each socket. At one delta per 50 ms a process
streaming 100 replies sends 2,000 a second, and the CPU goes to that instead of to starting the
replies people are waiting for. One stream alone keeps the 50 ms pace; past a handful, the process
keeps to about DELTAS_PER_SECOND in all, so each stream is updated a few times a second.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from office import events

# A lone stream: one event every 50 ms or 200 characters, not one per token.
DELTA_SECONDS, DELTA_CHARS = 0.05, 200
# What one process sends in all once its streams would exceed it at DELTA_SECONDS (10 streams).
DELTAS_PER_SECOND = 200
# However many streams: a reply still visibly moves, at least once a second.
MAX_DELTA_SECONDS = 1.0
# A delta stays a paragraph or two, whatever the interval.
MAX_DELTA_CHARS = 2000


@dataclass(frozen=True)
class DeltaPace:
    seconds: float
    chars: int


def delta_pace(streams: int) -> DeltaPace:
    """How often each of `streams` streams of one process sends a delta, and at how many
    characters it sends early. The size bound grows with the interval: a fast model would
    otherwise cut the longer interval back into DELTA_CHARS pieces."""
    seconds = min(MAX_DELTA_SECONDS, max(DELTA_SECONDS, streams / DELTAS_PER_SECOND))
    chars = min(MAX_DELTA_CHARS, round(DELTA_CHARS * seconds / DELTA_SECONDS))
    return DeltaPace(seconds=seconds, chars=chars)


class _Streams:
    """How many DeltaBatchers of this process are open (their streams not yet ended)."""

    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()

    def add(self, n: int) -> None:
        with self.lock:
            self.count += n


live_streams = _Streams()


@dataclass
class DeltaBatcher:
    """Collects one stream's text and sends it as `delta` events, batched by delta_pace. Open while
    the stream runs (a context manager: an exception still closes it, so the count stays true)."""

    channel_id: int
    task_id: int
    coworker: str
    clock: Callable[[], float] = time.monotonic
    streams: _Streams = live_streams

    def __post_init__(self) -> None:
        self.buffer: list[str] = []
        self.size = 0
        self.sent_at = self.clock()
        self.started = False  # nothing sent yet
        self.open = True
        self.streams.add(1)

    def __enter__(self) -> DeltaBatcher:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def push(self, text: str) -> None:
        self.buffer.append(text)
        self.size += len(text)
        if not self.started:
            # The first text goes at once, at any pace: it is what tells a person the reply began.
            self.started = True
            self.flush()
            return
        pace = delta_pace(self.streams.count)
        if self.size >= pace.chars or self.clock() - self.sent_at >= pace.seconds:
            self.flush()

    def finish(self) -> None:
        """The stream ended: send the rest, and wait until every delta has gone out, before the
        reply is stored (events.sent_out)."""
        self.close()
        self.flush()
        events.sent_out(self.channel_id)

    def close(self) -> None:
        if self.open:
            self.open = False
            self.streams.add(-1)

    def flush(self) -> None:
        if self.buffer:
            events.send_now(self.channel_id, {"type": "delta", "task": self.task_id, "coworker": self.coworker, "text": "".join(self.buffer)})
        self.buffer, self.size, self.sent_at = [], 0, self.clock()
