"""bench_context's cache lifetimes: a task's first request finds the cache only after a pause shorter than its lifetime."""

from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from benchmarks.lifetimes import clock_pauses, pause_shape, replay, typing_pauses


def rows(*sizes):
    """One single-call task per size: each request begins with the whole previous one."""
    return [
        {"turn": turn, "step": 0, "chars": size, "prefix_chars": sizes[turn - 2] if turn > 1 else 0}
        for turn, size in enumerate(sizes, start=1)
    ]


def test_a_pause_longer_than_the_lifetime_writes_the_whole_prompt_again():
    requests = rows(1_000, 1_100, 1_200)
    pauses = [60, 20 * 60]  # a quick follow-up, then a 20-minute pause

    five = replay(requests, pauses, "5m")
    # 1,000 written; 1,000 read + 100 written; the 20-minute pause outlived the cache: 1,200 written.
    assert five["cost_units"] == pytest.approx(1.25 * 1_000 + (0.1 * 1_000 + 1.25 * 100) + 1.25 * 1_200)
    hour = replay(requests, pauses, "1h")
    assert hour["cost_units"] == pytest.approx(2 * 1_000 + (0.1 * 1_000 + 2 * 100) + (0.1 * 1_100 + 2 * 100))
    assert hour["hour_tasks"] == 3 and five["hour_tasks"] == 0


def test_auto_chooses_before_each_task_from_the_pauses_so_far():
    requests = rows(*range(1_000, 2_000, 100))
    auto = replay(requests, [20 * 60] * 9, "auto")
    # The first task has no pause to go on (5 minutes); from the second on, every pause outlasts 5 minutes.
    assert (auto["tasks"], auto["hour_tasks"]) == (10, 9)
    assert replay(requests, [30] * 9, "auto")["hour_tasks"] == 0


def test_the_pause_patterns():
    start = datetime(2026, 5, 4, 9, tzinfo=timezone.utc)
    records = [SimpleNamespace(turn=turn, created_at=start + timedelta(minutes=m)) for turn, m in ((1, 0), (1, 1), (2, 31), (3, 32))]
    assert clock_pauses(records) == [30 * 60, 60]

    pauses = typing_pauses(2_001, seed=0)
    assert pauses == typing_pauses(2_001, seed=0) and pauses != typing_pauses(2_001, seed=1)
    shape = pause_shape(pauses)
    assert shape["count"] == 2_000
    assert 150 < shape["median_seconds"] < 210
    assert 0.6 < shape["within_5m"] < 0.7 and shape["within_1h"] > 0.98
