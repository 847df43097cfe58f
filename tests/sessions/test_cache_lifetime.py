"""Choosing the prompt cache's lifetime from a conversation's own pauses (pure: no database)."""

from datetime import datetime, timedelta, timezone

import pytest

from sessions.cache_lifetime import (
    FIVE_MINUTES,
    ONE_HOUR,
    RECENT_PAUSES,
    Rates,
    Reuse,
    choose,
    describe,
    expected_cost,
    pauses_between,
    rates_for,
    reuse_of,
)

MINUTE = 60.0


def test_the_first_task_has_no_pause_to_go_on_and_takes_the_cheaper_write():
    choice = choose([])
    assert choice.lifetime == FIVE_MINUTES and choice.chosen_by == "auto" and choice.pauses == 0
    assert "no pause in this conversation yet" in describe(choice.as_report())


def test_quick_follow_ups_keep_the_five_minute_cache():
    # Every pause is found by either cache: the hour would only make each new part dearer to write.
    assert choose([40, 90, 30, 120, 60]).lifetime == FIVE_MINUTES


def test_a_person_who_pauses_to_think_gets_the_hour():
    choice = choose([12 * MINUTE, 8 * MINUTE, 25 * MINUTE, 2 * MINUTE])
    assert choice.lifetime == ONE_HOUR
    assert choice.within_5m == 0.25 and choice.within_1h == 1.0
    assert choice.typical_pause_seconds == 10 * MINUTE
    words = describe(choice.as_report())
    assert "cached for 1 hour" in words and "10 minutes" in words and "75% outlasted a 5-minute cache" in words


def test_pauses_longer_than_an_hour_find_no_cache_either_way_so_the_cheaper_write_wins():
    assert choose([3 * 3600, 5 * 3600, 90 * MINUTE]).lifetime == FIVE_MINUTES


def test_a_single_pause_is_enough_to_choose_from():
    assert choose([20 * MINUTE]).lifetime == ONE_HOUR
    assert "your last pause here lasted 20 minutes" in describe(choose([20 * MINUTE]).as_report())


def test_the_break_even_follows_the_prices():
    """With Anthropic's multipliers the hour pays once more than about 1 pause in 14 outlasts 5 minutes
    (and all are under an hour): one re-write costs as much as the dearer writes of many hits."""
    mostly_quick = [MINUTE] * 9 + [10 * MINUTE]  # 1 in 10 outlasts 5 minutes
    assert choose(mostly_quick).lifetime == ONE_HOUR
    assert choose([MINUTE] * 19 + [10 * MINUTE]).lifetime == FIVE_MINUTES  # 1 in 20: below the break-even
    assert choose([10 * MINUTE] * 3 + [MINUTE] * RECENT_PAUSES).lifetime == FIVE_MINUTES  # they fell out of the pace
    # A model whose hour-long write cost 5x would not pay for it at the same pace.
    assert choose(mostly_quick, rates=Rates(write_1h=5.0)).lifetime == FIVE_MINUTES
    assert expected_cost(ONE_HOUR, 1.0) < expected_cost(FIVE_MINUTES, 0.0)


def test_a_conversation_whose_prompt_changes_a_lot_keeps_the_five_minute_cache():
    """A fold at every task: the hour outlives the pauses, but each task finds little of the one before,
    and writes much anew at the dearer price."""
    thinking = [12 * MINUTE, 8 * MINUTE, 25 * MINUTE, 2 * MINUTE]
    # (written, read, first call's read) per earlier task; the second never found the cache.
    churning = reuse_of([(3_000, 7_000, 1_000), (9_000, 0, 0), (2_500, 7_500, 1_500)])
    assert churning == pytest.approx(Reuse(written=0.275, first_read=0.125))
    choice = choose(thinking, reuse=churning)
    assert choice.lifetime == FIVE_MINUTES
    assert "each task here finds only 12% of its prompt in the cache" in describe(choice.as_report())
    steady = reuse_of([(400, 3_600, 3_600)] * 3)
    assert choose(thinking, reuse=steady).lifetime == ONE_HOUR
    assert reuse_of([(9_000, 0, 0)]) == Reuse()  # nothing found yet: the default


def test_what_an_admin_sets_wins_over_the_pace():
    assert choose([MINUTE], setting=ONE_HOUR).lifetime == ONE_HOUR
    chosen = choose([20 * MINUTE], setting=FIVE_MINUTES)
    assert chosen.lifetime == FIVE_MINUTES and chosen.chosen_by == "policy"
    assert describe(chosen.as_report()) == "The prompt was cached for 5 minutes, as the context policy sets."


def test_pauses_run_from_the_end_of_one_task_to_the_next_instruction():
    start = datetime(2026, 5, 4, 9, 0, tzinfo=timezone.utc)
    tasks = [
        (start, start + timedelta(seconds=30)),
        (start + timedelta(minutes=10), start + timedelta(minutes=11)),  # 9.5 minutes after the first ended
        (start + timedelta(minutes=10, seconds=20), None),  # sent while the second still ran: no pause
        (start + timedelta(minutes=40), None),  # the one before never finished: from its arrival
    ]
    assert pauses_between(tasks) == [570.0, 0.0, 1780.0]
    assert pauses_between(tasks[:1]) == [] and pauses_between([]) == []


def test_prices_become_multiples_of_the_input_price():
    sonnet = rates_for({"input": 3.0, "cache_write": 3.75, "cache_read": 0.30, "output": 15.0})
    assert (sonnet.read, sonnet.write_5m, sonnet.write_1h) == pytest.approx((0.1, 1.25, 2.0))
    assert rates_for({"input": 1.0, "cache_write_1h": 3.0}).write_1h == 3.0
    assert rates_for(None) == Rates()


def test_a_report_stored_before_the_choice_says_nothing():
    assert describe(None) == "" and describe({}) == ""
