"""Has anyone asked a running reply to stop? One read for every reply this process streams.

Each stream looked every half second (pipeline.STOP_CHECK_SECONDS) with a query of its own: at
100 streams that was 200 queries a second, each waiting for one of the pool's few connections,
and a stream waiting for a connection sends nothing (100 paced 10-second replies took 60 s).
The board reads the stop requests and attempts of every task being watched in this process with
one query, at most once per STOP_CHECK_SECONDS, by whichever stream finds it stale first; the
others read its copy, as fresh as their own read was.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Seen:
    stop_requested: bool
    attempts: int | None  # None: the task is gone


GONE = Seen(stop_requested=False, attempts=None)


@dataclass
class Board:
    """The task ids of live watchers (weakly held: a finished stream's check simply goes away),
    and what the last read saw of each."""

    every: float
    read: Callable[[set[int]], dict[int, Seen]]
    clock: Callable[[], float] = time.monotonic
    seen: dict[int, Seen] = field(default_factory=dict)
    read_at: float = float("-inf")

    def __post_init__(self) -> None:
        self._watchers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._reading = threading.Lock()

    def watch(self, watcher: object, task_id: int) -> float:
        """Watch `task_id` for as long as `watcher` lives; returns the moment, which look() needs."""
        with self._lock:
            self._watchers[watcher] = task_id
        return self.clock()

    def look(self, task_id: int, since: float) -> Seen:
        """What a read begun after `since` (when the watch began) saw of `task_id`: the shared
        read if it is fresh, after reading again if it is stale (one thread reads for all)."""
        if self.clock() - self.read_at >= self.every and self._reading.acquire(blocking=False):
            try:
                if self.clock() - self.read_at >= self.every:  # another thread may have just read
                    with self._lock:
                        ids = set(self._watchers.values()) | {task_id}
                    began = self.clock()
                    rows = self.read(ids)
                    self.seen = {pk: rows.get(pk, GONE) for pk in ids}
                    self.read_at = began  # as old as the moment the query began
            finally:
                self._reading.release()
        seen = self.seen.get(task_id) if self.read_at >= since else None
        if seen is None:
            # Watched since the last read began (a new attempt must not be judged by what was seen
            # of the one before it): read this one alone, once.
            seen = self.read({task_id}).get(task_id, GONE)
        return seen
