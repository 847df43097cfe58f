"""Usage at a glance, as plain values: tokens, the share of input read from the cache and cost, per
coworker and per day, over a range of days people choose.

Pure: no ORM import. office.usage_views loads the recorded calls (sessions.ModelCall), grouped by day
and coworker, and hands them here; office.charts draws them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal

# The ranges people can choose, in the order the page offers them.
RANGES = {"week": "This week", "month": "This month", "30d": "Last 30 days"}
DEFAULT_RANGE = "week"


@dataclass(frozen=True)
class DayRange:
    key: str
    label: str
    first: date
    last: date  # inclusive: today

    @property
    def days(self) -> list[date]:
        return [self.first + timedelta(days=n) for n in range((self.last - self.first).days + 1)]


def choose_range(key: str | None, today: date) -> DayRange:
    """The week (from Monday), the calendar month, or the last 30 days, each up to today; anything
    else is this week."""
    key = key if key in RANGES else DEFAULT_RANGE
    if key == "month":
        first = today.replace(day=1)
    elif key == "30d":
        first = today - timedelta(days=29)
    else:
        first = today - timedelta(days=today.weekday())
    return DayRange(key, RANGES[key], first, today)


@dataclass(frozen=True)
class Row:
    """The calls of one coworker on one day, summed (one row of the grouped query)."""

    day: date
    coworker: str  # the slug the calls were recorded with
    calls: int = 0
    input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal("0")
    unpriced: int = 0  # calls of a model with no price: their tokens count, their cost is unknown
    cached_calls: int = 0  # calls that used the model's prompt cache (not offline)
    hour_cached_calls: int = 0  # of those, the ones cached for an hour (their writes cost 2× input)


@dataclass(frozen=True)
class Totals:
    calls: int = 0
    input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal("0")
    unpriced: int = 0
    cached_calls: int = 0
    hour_cached_calls: int = 0

    def __add__(self, row: Row | Totals) -> Totals:
        return Totals(
            self.calls + row.calls,
            self.input_tokens + row.input_tokens,
            self.cache_write_tokens + row.cache_write_tokens,
            self.cache_read_tokens + row.cache_read_tokens,
            self.output_tokens + row.output_tokens,
            self.cost + row.cost,
            self.unpriced + row.unpriced,
            self.cached_calls + row.cached_calls,
            self.hour_cached_calls + row.hour_cached_calls,
        )

    @property
    def prompt_tokens(self) -> int:
        """Everything the model read: new input, what was written to the cache and what was read from it."""
        return self.input_tokens + self.cache_write_tokens + self.cache_read_tokens

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens

    @property
    def cache_read_share(self) -> float | None:
        """The share of the prompt read from the cache (billed at a tenth of the input price); None with no prompt."""
        return self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else None


@dataclass(frozen=True)
class Usage:
    days: list[date]
    coworkers: list[str]  # slugs: the office's coworkers first, then anyone else who has calls in the range
    total: Totals
    by_coworker: dict[str, Totals]
    by_day: dict[date, Totals]
    by_day_and_coworker: dict[tuple[date, str], Totals] = field(default_factory=dict)


def summarize(rows: Iterable[Row], *, days: Sequence[date], coworkers: Sequence[str]) -> Usage:
    """Sum the rows per coworker, per day and per both; every day of the range and every coworker
    appears, with zeros where nothing was used (a quiet day is a fact too)."""
    rows = [r for r in rows if days and days[0] <= r.day <= days[-1]]
    order = list(dict.fromkeys([*coworkers, *sorted({r.coworker for r in rows})]))
    by_coworker = {slug: Totals() for slug in order}
    by_day = {day: Totals() for day in days}
    both: dict[tuple[date, str], Totals] = {}
    total = Totals()
    for row in rows:
        by_coworker[row.coworker] += row
        by_day[row.day] += row
        both[(row.day, row.coworker)] = both.get((row.day, row.coworker), Totals()) + row
        total += row
    return Usage(list(days), order, total, by_coworker, by_day, both)


def format_share(share: float | None) -> str:
    return "—" if share is None else f"{share:.0%}"


def format_cost(cost: Decimal, unpriced: int = 0) -> str:
    """Dollars with cents; under a cent shows more digits, so small test runs do not all read $0.00."""
    places = Decimal("0.01") if cost == 0 or cost >= Decimal("0.01") else Decimal("0.0001")
    text = f"${cost.quantize(places, rounding=ROUND_HALF_UP):,}"
    return text + (" + unpriced calls" if unpriced else "")


def format_cache_kept(totals: Totals) -> str:
    """How long prompts were cached, in words: "5 minutes", "1 hour", "1 hour for 3 of 10 calls" (the rest
    5 minutes); "—" with no cached call (offline)."""
    if not totals.cached_calls:
        return "—"
    if not totals.hour_cached_calls:
        return "5 minutes"
    if totals.hour_cached_calls == totals.cached_calls:
        return "1 hour"
    return f"1 hour for {totals.hour_cached_calls:,} of {totals.cached_calls:,} calls"


def format_tokens(tokens: int) -> str:
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.1f}M"
    if tokens >= 10_000:
        return f"{tokens / 1_000:.0f}k"
    return f"{tokens:,}"
