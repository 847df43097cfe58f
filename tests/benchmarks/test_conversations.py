import re
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.conversations import COWORKERS, Conversation, generate_conversation
from sessions.history import find_faults, group_tasks, order_chain, rebuild_messages

CJK = re.compile(r"[\u4e00-\u9fff]")


@cache
def conversation(n: int, language: str = "en", seed: int = 0) -> Conversation:
    return generate_conversation(n, language=language, seed=seed)


def task_chars(task) -> int:
    return sum(len(r.content) + sum(len(str(dict(c.args))) for c in r.tool_calls) for r in task.records)


def test_it_is_deterministic():
    assert generate_conversation(30, language="en", seed=7) == generate_conversation(30, language="en", seed=7)
    assert generate_conversation(30, language="zh", seed=7) == generate_conversation(30, language="zh", seed=7)


def test_it_varies_with_the_seed():
    first, second = conversation(30, seed=0), conversation(30, seed=1)
    assert [r.content for r in first.records] != [r.content for r in second.records]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_it_forms_a_valid_chain_a_provider_accepts(language):
    records = conversation(200, language).records
    assert order_chain(records) == list(records)
    tasks = group_tasks(records)
    assert [task.turn for task in tasks] == list(range(1, 201))
    assert all(task.records[0].role == "user" and task.records[0].content for task in tasks)
    assert all(task.records[-1].role == "assistant" and task.records[-1].content for task in tasks)
    rebuilt = rebuild_messages(records)
    assert rebuilt.repaired_tool_calls == () and rebuilt.dropped_tool_results == ()
    assert find_faults(rebuilt.messages) == []


def test_its_tool_call_ids_are_unique_and_answered():
    records = conversation(200).records
    call_ids = [call.id for record in records for call in record.tool_calls]
    assert len(call_ids) == len(set(call_ids))
    assert all(re.fullmatch(r"toolu_\d+_\d+", call_id) for call_id in call_ids)
    assert sorted(call_ids) == sorted(r.tool_call_id for r in records if r.role == "tool")


def test_its_records_are_timed_and_attributed():
    records = conversation(200).records
    assert all(a.created_at < b.created_at for a, b in zip(records, records[1:]))
    assert all(r.coworker is None for r in records if r.role == "user")
    assert {r.coworker for r in records if r.role != "user"} <= set(COWORKERS)
    assert len({r.coworker for r in records if r.role != "user"}) >= 4


def test_an_english_task_is_about_2500_characters_mostly_tool_results():
    records = conversation(200).records
    tasks = group_tasks(records)
    mean = sum(map(task_chars, tasks)) / len(tasks)
    tool = sum(len(r.content) for r in records if r.role == "tool")
    assert 2_000 <= mean <= 3_000
    assert tool / sum(map(task_chars, tasks)) > 0.6


def test_a_chinese_task_says_the_same_in_fewer_characters():
    records = conversation(200, "zh").records
    tasks = group_tasks(records)
    mean = sum(map(task_chars, tasks)) / len(tasks)
    tool = sum(len(r.content) for r in records if r.role == "tool")
    assert 1_000 <= mean <= 3_000
    assert tool / sum(map(task_chars, tasks)) > 0.6


def test_the_chinese_variant_is_written_in_chinese():
    records = conversation(50, "zh").records
    text = "".join(r.content for r in records if r.role in ("user", "assistant"))
    assert len(CJK.findall(text)) / len(text) > 0.5
    assert "自由接案設計師" in {f.needle for f in conversation(50, "zh").facts}
    english = "".join(r.content for r in conversation(50).records)
    assert not CJK.search(english)


def test_topics_rotate_in_blocks():
    tasks = group_tasks(conversation(100).records)
    coworkers = [task.records[-1].coworker for task in tasks]
    changes = sum(a != b for a, b in zip(coworkers, coworkers[1:]))
    assert 10 < changes < 80  # blocks of several tasks, not one topic, not noise


@pytest.mark.parametrize("language", ["en", "zh"])
def test_it_plants_facts_early_in_the_users_words(language):
    convo = conversation(100, language)
    tasks = {task.turn: task for task in group_tasks(convo.records)}
    assert len(convo.facts) == 8
    assert len({fact.needle for fact in convo.facts}) == 8
    for fact in convo.facts:
        assert 10 <= fact.planted_turn <= 30
        assert fact.needle in tasks[fact.planted_turn].instruction


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_needle_appears_only_where_its_fact_is_planted(language):
    # Answers to the later questions never restate it: a strategy gets no second copy for free.
    convo = conversation(200, language)
    for fact in convo.facts:
        turns = {
            r.turn for r in convo.records if fact.needle in r.content or any(fact.needle in str(c.args) for c in r.tool_calls)
        }
        assert turns == {fact.planted_turn}, fact.key


def test_later_tasks_ask_about_the_facts():
    convo = conversation(200)
    tasks = {task.turn: task for task in group_tasks(convo.records)}
    asked = [turn for fact in convo.facts for turn in fact.asked_turns]
    assert len(asked) == len(set(asked)) == 8
    for fact in convo.facts:
        for turn in fact.asked_turns:
            assert turn > fact.planted_turn and turn >= 100
            assert fact.question in tasks[turn].instruction


@pytest.mark.parametrize("n", [1, 2, 3, 10])
def test_a_short_conversation_still_plants_every_fact(n):
    convo = conversation(n)
    tasks = {task.turn: task for task in group_tasks(convo.records)}
    assert len(tasks) == n
    for fact in convo.facts:
        assert fact.needle in tasks[fact.planted_turn].instruction
        assert all(turn > fact.planted_turn for turn in fact.asked_turns)


def test_it_generates_a_thousand_tasks():
    convo = conversation(1000)
    assert convo.n_tasks == 1000
    assert all(1 <= fact.planted_turn <= 300 for fact in convo.facts)


def test_it_refuses_what_it_cannot_generate():
    with pytest.raises(ValueError):
        generate_conversation(0)
    with pytest.raises(ValueError):
        generate_conversation(5, language="fr")


@settings(max_examples=20)
@given(n=st.integers(1, 40), seed=st.integers(0, 10_000), language=st.sampled_from(["en", "zh"]))
def test_every_conversation_is_valid_and_keeps_its_needles_where_planted(n, seed, language):
    convo = generate_conversation(n, language=language, seed=seed)
    assert find_faults(rebuild_messages(convo.records).messages) == []
    assert [task.turn for task in group_tasks(order_chain(convo.records))] == list(range(1, n + 1))
    for fact in convo.facts:
        assert {r.turn for r in convo.records if fact.needle in r.content} == {fact.planted_turn}
