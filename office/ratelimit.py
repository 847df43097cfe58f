"""Per-person rate limits (instructions a minute), counted in the Django cache so every Daphne
process shares them (Redis in production). Must not import models.

A fixed window: each period has its own counter, created by `cache.add` and raised by
`cache.incr`, both atomic in Redis and in the local-memory cache. A burst straddling two
windows can reach twice the limit; for "no more than about N a minute" that is enough.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from django.core.cache import cache


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    # Whole seconds until the current window ends (at least 1); when a refused caller may try again.
    retry_after: int


def window(now: float, period: int) -> tuple[int, int]:
    """The window `now` falls in: its number, and the whole seconds left in it (at least 1)."""
    number = int(now // period)
    left = (number + 1) * period - now
    return number, max(1, math.ceil(left))


def judge(count: int, *, limit: int, retry_after: int) -> Verdict:
    """The `count`th hit of a window is allowed while it is within the limit."""
    return Verdict(allowed=count <= limit, retry_after=retry_after)


def hit(key: str, *, limit: int, period: int = 60, now: float | None = None) -> Verdict:
    """Count one hit of `key` in the current window and say whether it is allowed.

    Refused hits are counted too; they change nothing, since the window is already full.
    Blocking I/O with a Redis cache: call it off the event loop.
    """
    number, left = window(time.time() if now is None else now, period)
    counter = f"ratelimit:{key}:{number}"
    # The counter outlives its window a little, so an incr near the end still finds it.
    if cache.add(counter, 1, timeout=period + 5):
        count = 1
    else:
        try:
            count = cache.incr(counter)
        except ValueError:
            # Expired between add and incr: this hit opens it again.
            cache.add(counter, 1, timeout=period + 5)
            count = 1
    return judge(count, limit=limit, retry_after=left)


def wait_phrase(seconds: int) -> str:
    """'1 second', '42 seconds', '2 minutes'."""
    if seconds < 120:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    return f"{math.ceil(seconds / 60)} minutes"


class Bucket:
    """A token bucket in this process's memory (no cache round trip): one socket's frames, or one
    person's handshakes in one process."""

    def __init__(self, size: int, every: float, clock=time.monotonic) -> None:
        self.size, self.every, self.clock = size, every, clock
        self.tokens, self.at = float(size), clock()

    def take(self) -> bool:
        now = self.clock()
        self.tokens = min(self.size, self.tokens + (now - self.at) / self.every)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True

    def wait(self) -> int:
        """Whole seconds until the next token (at least 1)."""
        return max(1, math.ceil((1 - self.tokens) * self.every))


class PeopleBuckets:
    """A Bucket per person in this process: what one person may do across all their sockets here
    (a person may hold 40, and a limit per socket alone is multiplied by 40)."""

    FORGET_WHEN = 1_000  # people tracked before those whose bucket is full again are dropped

    def __init__(self, size: int, every: float) -> None:
        self.size, self.every = size, every
        self.buckets: dict[int, Bucket] = {}

    def take(self, person: int) -> bool:
        return self.bucket(person).take()

    def bucket(self, person: int) -> Bucket:
        if len(self.buckets) > self.FORGET_WHEN:
            now, full_after = time.monotonic(), self.size * self.every
            for who in [who for who, bucket in self.buckets.items() if now - bucket.at >= full_after]:
                del self.buckets[who]
        return self.buckets.setdefault(person, Bucket(self.size, self.every))

    def clear(self) -> None:
        """Everyone starts with a full burst again (tests: each has its own people)."""
        self.buckets.clear()
