"""bench_upkeep's figures: per-task upkeep around each session size, the largest size's over the
smallest's, and the target. Pure: standard library and benchmarks.metrics only.

A row is one task: milliseconds of each part of its upkeep (`index`: its messages' search
entries; `memory`: the memory extraction; `fold`: whether a fold is due and, when it is, the
fold) and whether it folded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from benchmarks.metrics import percentile

PARTS = ("index", "memory", "vector", "fold")
GROWTH = 1.5  # per-task upkeep at the largest size within this multiple of the smallest
WINDOW = 100  # tasks timed at each size: the 100 around it


def total(row: dict) -> float:
    return sum(row[part] for part in PARTS)


def window(size: int, width: int = WINDOW) -> tuple[int, int]:
    """The turns timed at a session size: the `width` tasks around it (51–150 for 100)."""
    if size <= width // 2:
        raise ValueError(f"a size must be over {width // 2} tasks, so that its window of {width} starts at task 1 or later")
    return size - width // 2 + 1, size + width // 2


def window_stats(rows: Sequence[dict]) -> dict:
    """p50 and p95 in ms of each part and of the whole upkeep, and how many of the tasks folded."""
    figures = {"turns": [rows[0]["turn"], rows[-1]["turn"]], "tasks": len(rows), "folds": sum(1 for r in rows if r["folded"])}
    for name, values in [("upkeep", [total(r) for r in rows]), *[(p, [r[p] for r in rows]) for p in PARTS]]:
        figures[name] = {"p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2)}
    return figures


def evaluate(rows_by_size: Mapping[int, Sequence[dict]]) -> dict:
    """Each size's figures, and the largest size's upkeep p50 and p95 over the smallest's."""
    sizes = {size: window_stats(rows) for size, rows in sorted(rows_by_size.items())}
    small, large = sizes[min(sizes)]["upkeep"], sizes[max(sizes)]["upkeep"]
    ratios = {q: round(large[q] / max(small[q], 1e-9), 2) for q in ("p50", "p95")}
    return {
        "sizes": sizes,
        "ratio": ratios,
        "target": f"p50 and p95 at {max(sizes):,} tasks within {GROWTH}× of {min(sizes):,}",
        "passed": all(ratio <= GROWTH for ratio in ratios.values()),
    }


def catch_up_stats(folds: Sequence[dict], n_tasks: int, width: int = WINDOW) -> dict:
    """An import's catch-up, per task (memory extraction and its share of the fold), over its
    first `width` tasks after the first fold and its last `width`: p50, p95 and the ratio."""
    if not folds:
        return {}
    start = folds[0]["turns"][0]
    spans = {"early": (start, start + width - 1), "late": (n_tasks - width + 1, n_tasks)}
    out = {}
    for name, (a, b) in spans.items():
        values = [f["ms_per_task"] for f in folds if a <= f["turns"][0] and f["turns"][1] <= b]
        if values:
            out[name] = {"turns": [a, b], "p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2)}
    if len(out) == 2:
        out["ratio"] = {q: round(out["late"][q] / max(out["early"][q], 1e-9), 2) for q in ("p50", "p95")}
    return out


def slowest_queries(times: Mapping[str, Sequence[float]], n: int = 5) -> list[dict]:
    """The n statements that took the most time in all, with their p50 and count (the SQL
    without its column list, and cut short: what it reads and how is in the rest)."""
    ranked = sorted(times.items(), key=lambda item: -sum(item[1]))[:n]
    return [{"sql": re.sub(r"^SELECT .*? FROM ", "SELECT … FROM ", sql, flags=re.S)[:200], "p50_ms": round(percentile(ms, 50), 3), "count": len(ms), "total_ms": round(sum(ms), 1)} for sql, ms in ranked]


def format_queries(queries: Mapping[int, Sequence[dict]]) -> str:
    lines = ["\nThe upkeep's slowest statements at each size (p50 ms, times run):"]
    for size, rows in queries.items():
        lines.append(f"  {size:,} tasks")
        lines += [f"    {row['p50_ms']:>8.3f} ms ×{row['count']:<4} {row['sql']}" for row in rows]
    return "\n".join(lines)


def format_report(result: dict) -> str:
    evaluation = result["evaluation"]
    lines = [
        f"{result['database']}, {result['language']}, fold_batch {result['fold_batch']}: "
        f"per-task upkeep in ms (p50 / p95) over the {WINDOW} tasks around each size",
        f"  {'tasks':>7} {'window':>13}  {'upkeep':>15} {'index':>13} {'memory':>13} {'vector':>13} {'fold':>15}  folds",
    ]
    for size, stats in evaluation["sizes"].items():
        a, b = stats["turns"]
        cells = [f"{stats[p]['p50']:.2f} / {stats[p]['p95']:.2f}" for p in ("upkeep", *PARTS)]
        lines.append(f"  {size:>7,} {f'{a:,}–{b:,}':>13}  {cells[0]:>15} {cells[1]:>13} {cells[2]:>13} {cells[3]:>13} {cells[4]:>15}  {stats['folds']}")
    ratio = evaluation["ratio"]
    verdict = "PASS" if evaluation["passed"] else "FAIL"
    lines.append(f"  largest / smallest: p50 {ratio['p50']:.2f}×, p95 {ratio['p95']:.2f}×  {verdict} ({evaluation['target']})")
    if (catch_up := result.get("catch_up")) and "ratio" in catch_up:
        early, late = catch_up["early"], catch_up["late"]
        lines.append(
            f"  import catch-up of the largest, ms per task (p50 / p95 over its folds): tasks {early['turns'][0]:,}–"
            f"{early['turns'][1]:,} {early['p50']:.2f} / {early['p95']:.2f}, tasks {late['turns'][0]:,}–{late['turns'][1]:,} "
            f"{late['p50']:.2f} / {late['p95']:.2f} ({catch_up['ratio']['p50']:.2f}× / {catch_up['ratio']['p95']:.2f}×)"
        )
    return "\n".join(lines)
