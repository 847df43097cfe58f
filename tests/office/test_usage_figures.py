"""The usage page's figures and chart as pure functions: ranges, sums with quiet days, the SVG."""

from datetime import date
from decimal import Decimal

from office import charts
from office.usage import Row, Totals, choose_range, format_cache_kept, format_cost, summarize

TUESDAY = date(2026, 12, 1)


def test_this_week_starts_on_monday_and_unknown_ranges_mean_this_week():
    week = choose_range(None, TUESDAY)
    assert (week.first, week.last, len(week.days)) == (date(2026, 11, 30), TUESDAY, 2)
    assert choose_range("forever", TUESDAY) == week
    assert choose_range("month", date(2026, 12, 17)).first == date(2026, 12, 1)
    assert len(choose_range("30d", TUESDAY).days) == 30


def test_every_day_and_coworker_appears_with_zeros_where_nothing_was_used():
    days = choose_range("week", date(2026, 12, 3)).days  # Monday to Thursday
    rows = [
        Row(day=days[0], coworker="mina", input_tokens=100, cache_read_tokens=300, cost=Decimal("0.01")),
        Row(day=days[2], coworker="ghost", output_tokens=5),  # a coworker since removed from the office
    ]

    usage = summarize(rows, days=days, coworkers=["mina", "theo"])

    assert usage.coworkers == ["mina", "theo", "ghost"]
    assert usage.by_coworker["theo"] == Totals()
    assert usage.by_coworker["mina"].cache_read_share == 0.75
    assert usage.by_day[days[1]].tokens == 0 and usage.by_day[days[1]].cache_read_share is None
    assert usage.total.tokens == 405 and usage.total.cost == Decimal("0.01")


def test_small_costs_keep_their_digits_and_unknown_prices_say_so():
    assert format_cost(Decimal("0")) == "$0.00"
    assert format_cost(Decimal("0.0042")) == "$0.0042"
    assert format_cost(Decimal("12.345")) == "$12.35"
    assert format_cost(Decimal("1"), unpriced=2) == "$1.00 + unpriced calls"


def test_the_chart_stacks_each_day_and_says_so_when_empty():
    svg = charts.stacked_bars(
        title="Tokens per day",
        labels=["Mon 30", "Tue 1"],
        bars=[[charts.Segment("Mina", "#e11d48", 30, "30 tokens"), charts.Segment("Theo", "red;x", 10, "10")], []],
        axis_label=str,
    )
    assert svg.startswith('<svg class="chart"') and 'role="img"' in svg
    assert svg.count("<rect") == 2
    assert 'fill="#e11d48"' in svg and "red;x" not in svg, "only a checked hex colour reaches a fill"
    assert "<title>Mina, Mon 30: 30 tokens</title>" in svg
    assert "Nothing used" not in svg

    empty = charts.stacked_bars(title="Cost", labels=["Mon 30"], bars=[[]], axis_label=str)
    assert "Nothing used in this range." in empty


def test_the_axis_ends_on_a_round_number():
    assert [charts.nice_ceiling(v) for v in (0, 0.07, 3, 42_000, 99)] == [1.0, 0.1, 5, 50_000, 100]


def test_it_says_how_long_prompts_were_cached():
    assert format_cache_kept(Totals()) == "—"  # offline, or nothing used the cache
    assert format_cache_kept(Totals(cached_calls=4)) == "5 minutes"
    assert format_cache_kept(Totals(cached_calls=4, hour_cached_calls=4)) == "1 hour"
    assert format_cache_kept(Totals(cached_calls=10, hour_cached_calls=3)) == "1 hour for 3 of 10 calls"
