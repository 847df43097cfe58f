"""bench_upkeep: the windows it times, the ratio it judges, and tasks lived as live ones are (prompt planned, memory extracted, folded)."""

import pytest

from benchmarks import upkeep_run
from benchmarks.conversations import generate_conversation
from benchmarks.upkeep_report import GROWTH, catch_up_stats, evaluate, slowest_queries, window
from sessions.models import Session, SummaryVersion, Task


def test_each_size_is_timed_over_the_hundred_tasks_around_it():
    assert window(100) == (51, 150)
    assert window(10_000) == (9_951, 10_050)
    with pytest.raises(ValueError):
        window(50)  # its window would start before the first task


def _rows(turns, ms):
    return [{"turn": t, "index": ms, "memory": ms, "vector": ms, "fold": ms, "folded": t % 4 == 0} for t in turns]


def test_the_largest_size_passes_within_the_growth_limit_and_fails_beyond_it():
    flat = evaluate({100: _rows(range(51, 151), 1.0), 10_000: _rows(range(9_951, 10_051), GROWTH)})
    assert flat["ratio"] == {"p50": GROWTH, "p95": GROWTH} and flat["passed"]
    assert flat["sizes"][100]["upkeep"]["p50"] == 4.0 and flat["sizes"][100]["folds"] == 25
    grown = evaluate({100: _rows(range(51, 151), 1.0), 10_000: _rows(range(9_951, 10_051), GROWTH + 0.1)})
    assert not grown["passed"]


def test_the_catch_up_is_read_fold_by_fold_at_both_ends():
    folds = [{"turns": [t, t + 3], "ms_per_task": 2.0 if t < 500 else 3.0} for t in range(1, 1_000, 4)]
    stats = catch_up_stats(folds, 1_000)
    assert stats["early"]["turns"] == [1, 100] and stats["early"]["p50"] == 2.0
    assert stats["late"]["turns"] == [901, 1_000] and stats["ratio"]["p50"] == 1.5


@pytest.mark.django_db
def test_each_size_is_caught_up_then_lived_like_a_live_session():
    conversation = generate_conversation(40, language="en", seed=0)
    lines = []
    rows, folds = upkeep_run.measure(conversation, [20, 30], fold_batch=4, progress=lines.append, width=8)

    assert [r["turn"] for r in rows[20]] == list(range(17, 25)) and [r["turn"] for r in rows[30]] == list(range(27, 35))
    assert all(r[part] >= 0 for r in rows[30] for part in ("index", "memory", "vector", "fold"))
    assert any(r["index"] > 0 for r in rows[30]), "storing a message indexes it, and that is timed"
    assert sum(r["folded"] for r in rows[30]) >= 1
    assert folds and all(f["ms_per_task"] >= 0 for f in folds), "the import's catch-up was timed fold by fold"
    session = Session.objects.get(channel__office__slug__startswith="upkeep-", tasks__turn=34)
    lived = Task.objects.filter(session=session, turn__gte=27)
    assert not lived.filter(prompt_report__isnull=True).exists(), "each lived task keeps its prompt's plan"
    assert not Task.objects.filter(session=session, memory_extracted_at__isnull=True).exists()
    assert SummaryVersion.objects.filter(session=session).order_by("-through_turn").first().through_turn >= 20


def test_the_slowest_statements_come_first_and_say_what_they_read():
    times = {'SELECT "a"."id", "a"."x" FROM "a" WHERE "a"."id" = %s': [1.0, 1.0], "UPDATE b SET x = 1": [5.0]}
    first, second = slowest_queries(times)
    assert first == {"sql": "UPDATE b SET x = 1", "p50_ms": 5.0, "count": 1, "total_ms": 5.0}
    assert second["sql"] == 'SELECT … FROM "a" WHERE "a"."id" = %s' and second["count"] == 2
