"""How long the model provider keeps a conversation's prompt cached: 5 minutes or an hour.

Anthropic's prompt cache lives 5 minutes from its last use, or an hour for a dearer write
(2× the input price instead of 1.25×; a read costs 0.1× either way). A person who reads the
reply, thinks and types the next instruction often pauses longer than 5 minutes: the 5-minute
cache has expired and the whole prompt is written again. The hour pays where that happens,
and costs more where it does not (quick follow-ups: the cache is found either way, and the new
part of each prompt is written at the dearer rate). `choose` weighs the two from the
conversation's own pauses, or takes what the context policy says.

Pure: standard library only (sessions.spending loads the pauses; benchmarks.report replays them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from statistics import median
from typing import Any

FIVE_MINUTES = "5m"
ONE_HOUR = "1h"
AUTO = "auto"
# The lifetimes the Messages API accepts on a cache breakpoint (`cache_control.ttl`), in seconds.
LIFETIMES = {FIVE_MINUTES: 300, ONE_HOUR: 3600}
# What a context policy may say (empty inherits; a kind's empty is auto).
SETTINGS = (AUTO, FIVE_MINUTES, ONE_HOUR)
WORDS = {FIVE_MINUTES: "5 minutes", ONE_HOUR: "1 hour"}

# The pace is the conversation's latest pauses: enough to see a habit, few enough to follow a change
# (a person who moved from quick follow-ups to a meeting-paced afternoon).
RECENT_PAUSES = 20
# Until a task of the conversation has found the cache: a task is one request, a tenth of it new since
# the request before (about what bench_context shows for the builder between folds).
NEW_SHARE = 0.1


@dataclass(frozen=True)
class Rates:
    """Cache prices as multiples of the model's input price."""

    read: float = 0.1
    write_5m: float = 1.25
    write_1h: float = 2.0

    def write(self, lifetime: str) -> float:
        return self.write_1h if lifetime == ONE_HOUR else self.write_5m


def rates_for(price: Mapping[str, Any] | None) -> Rates:
    """A MODEL_PRICES entry as multiples of its input price; Anthropic's multipliers where it lists none
    (and for a model with no price: the ratios are the same for every Claude model)."""
    if not price or not price.get("input"):
        return Rates()
    base = price["input"]
    return Rates(
        read=price.get("cache_read", 0.1 * base) / base,
        write_5m=price.get("cache_write", 1.25 * base) / base,
        write_1h=price.get("cache_write_1h", 2.0 * base) / base,
    )


@dataclass(frozen=True)
class Reuse:
    """How a conversation's tasks use the cache, as shares of a task's prompt tokens (all its calls), on
    tasks that found it: `written` is new (the last instruction and reply, tool results, a changed
    summary) and written even when found, at the lifetime's price; `first_read` is what the task's first
    call read, which a pause longer than the lifetime would have written again."""

    written: float = NEW_SHARE
    first_read: float = 1 - NEW_SHARE


def reuse_of(tasks: Sequence[tuple[int, int, int]]) -> Reuse:
    """From the conversation's latest tasks' (written, read, first call's read) tokens, oldest first: those
    whose first call found the cache. The default Reuse with none."""
    hits = [task for task in tasks if task[2] > 0][-RECENT_PAUSES:]
    total = sum(written + read for written, read, _ in hits)
    if not total:
        return Reuse()
    return Reuse(written=sum(task[0] for task in hits) / total, first_read=sum(task[2] for task in hits) / total)


@dataclass(frozen=True)
class Choice:
    """The lifetime for a task's model calls, and what it was chosen from (for the task's report)."""

    lifetime: str
    chosen_by: str  # "policy" (an admin set it) or "auto" (from the pauses)
    pauses: int = 0  # how many pauses the choice saw
    typical_pause_seconds: float | None = None  # their median
    within_5m: float | None = None  # the share of them a 5-minute cache outlives
    within_1h: float | None = None
    reuse: Reuse | None = None  # how the conversation's tasks used the cache, as the choice assumed

    def as_report(self) -> dict:
        return {
            "lifetime": self.lifetime,
            "chosen_by": self.chosen_by,
            "pauses": self.pauses,
            "typical_pause_seconds": self.typical_pause_seconds,
            "within_5m": self.within_5m,
            "within_1h": self.within_1h,
            "written_share": self.reuse.written if self.reuse else None,
            "first_read_share": self.reuse.first_read if self.reuse else None,
        }


def expected_cost(lifetime: str, found_share: float, rates: Rates = Rates(), reuse: Reuse = Reuse()) -> float:
    """The expected input cost of a task's prompts, per token at the input price: what is new is written at
    the lifetime's price and the rest read; when the pause before it outlasted the cache (1 - found_share
    of the time), what its first call would have read is written again."""
    write = rates.write(lifetime)
    found = rates.read * (1 - reuse.written) + write * reuse.written
    return found + (1 - found_share) * reuse.first_read * (write - rates.read)


def choose(pauses: Sequence[float], *, setting: str = AUTO, rates: Rates = Rates(), reuse: Reuse = Reuse()) -> Choice:
    """The lifetime for the next task: the policy's when it names one, else the cheaper in expectation
    over the latest RECENT_PAUSES pauses (seconds from one task's end to the next instruction), for
    tasks that use the cache as the conversation's latest did (`reuse`).

    With no pause yet (a conversation's first task) there is nothing to go on: 5 minutes, the cheaper
    write. A pause counts as found when it is shorter than the lifetime."""
    if setting in LIFETIMES:
        return Choice(setting, "policy")
    recent = [max(0.0, float(p)) for p in pauses][-RECENT_PAUSES:]
    if not recent:
        return Choice(FIVE_MINUTES, AUTO)
    within = {name: sum(p < seconds for p in recent) / len(recent) for name, seconds in LIFETIMES.items()}
    hour_pays = expected_cost(ONE_HOUR, within[ONE_HOUR], rates, reuse) < expected_cost(
        FIVE_MINUTES, within[FIVE_MINUTES], rates, reuse
    )
    return Choice(
        ONE_HOUR if hour_pays else FIVE_MINUTES,
        AUTO,
        pauses=len(recent),
        typical_pause_seconds=float(median(recent)),
        within_5m=within[FIVE_MINUTES],
        within_1h=within[ONE_HOUR],
        reuse=reuse,
    )


def pauses_between(tasks: Sequence[tuple[datetime, datetime | None]]) -> list[float]:
    """The pause before each task after the first, in seconds: from the end of the one before (its
    last model call refreshed the cache; its start when it never finished) to this one's arrival.
    Tasks are (created_at, finished_at), oldest first; an instruction sent while the previous task
    still ran pauses 0."""
    pauses = []
    for (before_created, before_finished), (created, _) in zip(tasks, tasks[1:]):
        pauses.append(max(0.0, (created - (before_finished or before_created)).total_seconds()))
    return pauses


def describe(choice: Mapping[str, Any] | None) -> str:
    """The choice in plain words, for the task's report ("" for a report stored before it was made)."""
    if not choice or choice.get("lifetime") not in WORDS:
        return ""
    kept = f"The prompt was cached for {WORDS[choice['lifetime']]}"
    if choice.get("chosen_by") == "policy":
        return f"{kept}, as the context policy sets."
    count = int(choice.get("pauses") or 0)
    if not count:
        return f"{kept}: with no pause in this conversation yet, the shorter cache costs less to write."
    typical = _duration(float(choice.get("typical_pause_seconds") or 0))
    share = float(choice.get("within_5m") or 0)
    lasted = ("your last pause" if count == 1 else f"your last {count} pauses") + f" here lasted {typical}"
    lasted += "" if count == 1 else " typically"
    if choice["lifetime"] == ONE_HOUR:
        outlasted = f"{1 - share:.0%} outlasted a 5-minute cache"
        return f"{kept}: {lasted}, and {outlasted}, so the dearer hour-long write saves writing the prompt again."
    if float(choice.get("within_1h") or 0) > share and (choice.get("first_read_share") or 1) < 1 - NEW_SHARE:
        # Pauses the hour would outlive, but each task here finds little of the one before (it changes a lot).
        found = f"each task here finds only {float(choice['first_read_share']):.0%} of its prompt in the cache"
        return f"{kept}: {found}, so the hour-long cache's dearer writes would cost more than it saves."
    return f"{kept}: {lasted}, so the hour-long cache would not pay for its dearer write."


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} seconds"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds / 3600:.1f} hours"
