"""bench_context's cache lifetimes: what each strategy's requests cost when people pause between tasks.

The main table's cost assumes every request finds the previous one's cache. Here a task's first
request finds it only when the pause before it is shorter than the lifetime the previous request
wrote it with (5 minutes, or an hour at 2× the input price instead of 1.25×); the steps of a task's
tool loop are seconds apart and always find it. `auto` is the app's own choice
(sessions.cache_lifetime.choose) made before each task from the pauses so far and how the earlier
tasks used the cache (what they wrote anew, what their first request read), as the pipeline makes it.

Two pause patterns, each a list of seconds before tasks 2..N:
* typing: log-normal, the usual model of human think time between requests (most pauses short,
  a long right tail): median 3 minutes, σ 1.3, seeded. About a third of pauses outlast 5 minutes
  (reading the reply, trying it, a coffee), about 1 in 100 an hour.
* clock: the generated conversation's own timestamps: 6 to 300 minutes between tasks, uniform,
  every pause longer than 5 minutes: someone who comes back to the thread a few times a day.

Pure: standard library, sessions.cache_lifetime and benchmarks.metrics (no Django).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

from sessions.cache_lifetime import AUTO, FIVE_MINUTES, LIFETIMES, ONE_HOUR, Rates, choose, reuse_of

from .metrics import CACHE_READ, CACHE_WRITE

CACHE_WRITE_1H = 2.0
TYPING_MEDIAN_SECONDS = 180.0
TYPING_SIGMA = 1.3
SCENARIOS = ("typing", "clock")
CHOICES = (FIVE_MINUTES, ONE_HOUR, AUTO)
RATES = Rates(read=CACHE_READ, write_5m=CACHE_WRITE, write_1h=CACHE_WRITE_1H)


def typing_pauses(n_tasks: int, seed: int) -> list[float]:
    """Seconds before tasks 2..n_tasks, log-normal (median TYPING_MEDIAN_SECONDS, σ TYPING_SIGMA)."""
    rng = random.Random(f"typing-pauses-{seed}")
    return [rng.lognormvariate(math.log(TYPING_MEDIAN_SECONDS), TYPING_SIGMA) for _ in range(max(0, n_tasks - 1))]


def clock_pauses(records: Sequence) -> list[float]:
    """Seconds before tasks 2..N from the records' timestamps: a task's first record after the last of the one before."""
    first: dict[int, object] = {}
    last: dict[int, object] = {}
    for record in records:
        first.setdefault(record.turn, record.created_at)
        last[record.turn] = record.created_at
    turns = sorted(first)
    return [max(0.0, (first[turn] - last[before]).total_seconds()) for before, turn in zip(turns, turns[1:])]


def request_cost(chars: int, prefix_chars: int, *, found: bool, lifetime: str) -> float:
    """One request's input cost in price units per character: the shared prefix read when found, the rest
    (all of it when not found) written at the lifetime's price."""
    read = prefix_chars if found else 0
    write = CACHE_WRITE_1H if lifetime == ONE_HOUR else CACHE_WRITE
    return CACHE_READ * read + write * (chars - read)


def replay(rows: Sequence[Mapping], pauses: Sequence[float], choice: str) -> dict:
    """The cost of a strategy's requests (bench_context's per-request rows) with these pauses, always
    caching for 5 minutes, for an hour, or as `auto` chooses before each task."""
    total = 0.0
    chosen: dict[int, str] = {}
    usage: dict[int, list[int]] = {}  # turn -> [written, read, first call's read] characters, as the app counts tokens
    for row in rows:
        turn = row["turn"]
        if turn not in chosen:
            before = pauses[: turn - 1]  # the pauses up to this task's, as the pipeline sees them
            reuse = reuse_of([tuple(counts) for counts in usage.values()])
            chosen[turn] = choose(before, rates=RATES, reuse=reuse).lifetime if choice == AUTO else choice
        lifetime = chosen[turn]
        if row["step"] or turn == 1:
            found = True  # the tool loop's next call, seconds later (the first request has no prefix anyway)
        else:
            pause = pauses[turn - 2] if turn - 2 < len(pauses) else 0.0
            found = pause < LIFETIMES[chosen.get(turn - 1, lifetime)]
        read = row["prefix_chars"] if found else 0
        counted = usage.setdefault(turn, [0, 0, read])
        counted[0] += row["chars"] - read
        counted[1] += read
        total += request_cost(row["chars"], row["prefix_chars"], found=found, lifetime=lifetime)
    hour = sum(value == ONE_HOUR for value in chosen.values())
    return {"cost_units": total, "tasks": len(chosen), "hour_tasks": hour}


def pause_shape(pauses: Sequence[float]) -> dict:
    """The pauses' median and the shares a 5-minute and a 1-hour cache outlive."""
    ordered = sorted(pauses)
    if not ordered:
        return {"count": 0, "median_seconds": None, "within_5m": None, "within_1h": None}
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return {
        "count": len(ordered),
        "median_seconds": median,
        "within_5m": sum(p < LIFETIMES[FIVE_MINUTES] for p in ordered) / len(ordered),
        "within_1h": sum(p < LIFETIMES[ONE_HOUR] for p in ordered) / len(ordered),
    }


def scenarios(conversation, seed: int) -> dict[str, list[float]]:
    return {"typing": typing_pauses(conversation.n_tasks, seed), "clock": clock_pauses(conversation.records)}


def lifetime_costs(rows: Sequence[Mapping], pauses_by_scenario: Mapping[str, Sequence[float]]) -> dict:
    """For each pause pattern and each choice: cost units and how many tasks were cached for an hour."""
    return {
        name: {choice: replay(rows, pauses, choice) for choice in CHOICES}
        for name, pauses in pauses_by_scenario.items()
    }


def add_to_run(run: dict, conversation, seed: int) -> None:
    """Each strategy's costs under the lifetimes, beside its other figures (JSON: strategies.<name>.lifetimes,
    and the pauses' shape under run["pauses"])."""
    pauses = scenarios(conversation, seed)
    run["pauses"] = {name: pause_shape(values) for name, values in pauses.items()}
    for summary in run["strategies"].values():
        summary["lifetimes"] = lifetime_costs(summary["per_request"], pauses)


# Output -----------------------------------------------------------------------------

LEGEND = (
    "Cache lifetimes: input cost as a share of sending the full history uncached (the main table's units\n"
    "assume every request finds the cache). A task's first request finds it only if the pause before it is\n"
    f"shorter than the lifetime: 5m (writes {CACHE_WRITE}x), 1h (writes {CACHE_WRITE_1H}x), auto (the app's choice before\n"
    "each task from the pauses so far; h: tasks it cached for an hour). Pauses: typing = log-normal, median\n"
    f"{TYPING_MEDIAN_SECONDS / 60:.0f} min, σ {TYPING_SIGMA}, seeded (--seed); clock = the conversation's timestamps (6-300 min apart)."
)


def format_lifetimes(run: dict, reference: str) -> str:
    """A table under format_run's: per strategy, cost shares always found, then per pause pattern 5m / 1h / auto."""
    uncached = run["strategies"][reference]["chars"]["cumulative"]
    width = max(13, *(len(name) for name in run["strategies"]))
    shapes = run.get("pauses") or {}

    def described(name: str) -> str:
        shape = shapes.get(name) or {}
        if not shape.get("count"):
            return name
        return f"{name} ({shape['within_5m']:.0%} <5m, {shape['within_1h']:.0%} <1h)"

    header = f"{'':<{width}}  {'found':>6}" + "".join(f"  {described(name):^27}" for name in SCENARIOS)
    columns = f"{'cache lifetime':<{width}}  {'always':>6}" + "".join(f"  {'5m':>6}  {'1h':>6}  {'auto':>11}" for _ in SCENARIOS)
    lines = [header.rstrip(), columns, "-" * len(columns)]
    for name, summary in run["strategies"].items():
        cells = [f"{name:<{width}}", f"{summary['cost_units'] / uncached:>6.3f}"]
        for scenario in SCENARIOS:
            costs = summary["lifetimes"][scenario]
            auto = costs[AUTO]
            cells += [
                f"{costs[FIVE_MINUTES]['cost_units'] / uncached:>6.3f}",
                f"{costs[ONE_HOUR]['cost_units'] / uncached:>6.3f}",
                f"{auto['cost_units'] / uncached:>6.3f} {_hours(auto):>4}",
            ]
        lines.append("  ".join(cells))
    return "\n".join(lines)


def _hours(auto: Mapping) -> str:
    return f"h{auto['hour_tasks'] / auto['tasks']:.0%}" if auto["tasks"] else ""
