from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, ChatMessage, HumanMessage, SystemMessage, ToolMessage

from sessions.history import (
    INTERRUPTED_TOOL_RESULT,
    ChainError,
    Fault,
    InvalidSequence,
    Record,
    ToolCall,
    find_faults,
    group_tasks,
    order_chain,
    rebuild_messages,
    validate_messages,
)


def chain(*specs: tuple) -> list[Record]:
    """Records linked in the given order: (role, content) or (role, content, extra fields)."""
    records = []
    for index, (role, content, *extra) in enumerate(specs):
        fields = extra[0] if extra else {}
        fields.setdefault("turn", 1)
        previous = records[-1].id if records else None
        records.append(Record(id=f"r{index}", previous=previous, role=role, content=content, **fields))
    return records


def calls(*ids: str) -> dict:
    return {"tool_calls": tuple(ToolCall(id=i, name="read_document", args={"title": "Q3 views"}) for i in ids)}


def result(call_id: str) -> dict:
    return {"tool_call_id": call_id}


def shape(messages: Sequence) -> list[tuple]:
    """What the model sees, compactly: (type, content or tool call id)."""
    return [
        (m.type, m.tool_call_id if isinstance(m, ToolMessage) else m.content)
        for m in messages
    ]


# order_chain


def test_it_orders_a_shuffled_chain_by_previous_links():
    records = chain(("user", "Which category?"), ("assistant", "Music."), ("user", "Thanks"))
    shuffled = [records[2], records[0], records[1]]

    assert order_chain(shuffled) == records
    assert order_chain([]) == []


@given(st.integers(1, 40), st.randoms())
def test_it_recovers_the_order_of_any_chain_whatever_order_it_is_loaded_in(length, rnd):
    records = chain(*[("user", str(i)) for i in range(length)])
    shuffled = records[:]
    rnd.shuffle(shuffled)

    assert order_chain(shuffled) == records


@pytest.mark.parametrize(
    ("records", "record_id", "words"),
    [
        ([Record("a", None, 1, "user"), Record("a", None, 1, "user")], "a", "duplicate id"),
        ([Record("a", None, 1, "user"), Record("b", "zz", 1, "user")], "b", "not in the session"),
        ([Record("a", None, 1, "user"), Record("b", None, 1, "user")], "b", "more than one head"),
        (
            [Record("a", None, 1, "user"), Record("b", "a", 1, "user"), Record("c", "a", 1, "user")],
            "c",
            "fork",
        ),
        ([Record("a", "b", 1, "user"), Record("b", "a", 1, "user")], "a", "no head"),
        (
            [Record("a", None, 1, "user"), Record("b", "c", 1, "user"), Record("c", "b", 1, "user")],
            "b",
            "not reachable",
        ),
    ],
)
def test_it_names_the_exact_fault_of_a_broken_chain(records, record_id, words):
    with pytest.raises(ChainError, match=words) as caught:
        order_chain(records)

    assert caught.value.record_id == record_id


# group_tasks


def test_it_groups_records_into_tasks_with_instruction_and_final_answer():
    records = chain(
        ("user", "Which category has the most views?"),
        ("assistant", "", calls("toolu_1")),
        ("tool", "[...]", result("toolu_1")),
        ("assistant", "Music has the most views."),
        ("assistant", " "),
        ("user", "And the least?", {"turn": 2}),
        ("notice", "This conversation is getting long.", {"turn": 2}),
    )

    first, second = group_tasks(records)

    assert (first.turn, len(first.records)) == (1, 5)
    assert first.instruction == "Which category has the most views?"
    assert first.final_answer == "Music has the most views."
    assert (second.turn, second.instruction, second.final_answer) == (2, "And the least?", "")


def test_it_groups_interleaved_turns_into_their_tasks():
    records = chain(("user", "one"), ("user", "two", {"turn": 2}), ("assistant", "late", {"turn": 1}))

    tasks = group_tasks(records)

    assert [(t.turn, [r.id for r in t.records]) for t in tasks] == [(1, ["r0", "r2"]), (2, ["r1"])]


# rebuild_messages


def test_it_rebuilds_a_plain_task_as_the_model_first_saw_it():
    records = chain(
        ("user", "Which category has the most views?"),
        ("assistant", "", calls("toolu_1")),
        ("tool", "[...]", result("toolu_1")),
        ("assistant", "Music has the most views."),
    )

    rebuilt = rebuild_messages(records)

    assert shape(rebuilt.messages) == [
        ("human", "Which category has the most views?"),
        ("ai", ""),
        ("tool", "toolu_1"),
        ("ai", "Music has the most views."),
    ]
    assert rebuilt.messages[1].tool_calls == [
        {"name": "read_document", "args": {"title": "Q3 views"}, "id": "toolu_1", "type": "tool_call"}
    ]
    assert [m.id for m in rebuilt.messages] == ["r0", "r1", "r2", "r3"]
    assert (rebuilt.repaired_tool_calls, rebuilt.dropped_tool_results) == ((), ())


def test_it_answers_a_tool_call_cut_off_by_a_crash_with_an_error_result():
    records = chain(("user", "Which category?"), ("assistant", "", calls("toolu_1")))

    rebuilt = rebuild_messages(records)

    synthetic = rebuilt.messages[-1]
    assert shape(rebuilt.messages) == [("human", "Which category?"), ("ai", ""), ("tool", "toolu_1")]
    assert (synthetic.content, synthetic.status, synthetic.id) == (INTERRUPTED_TOOL_RESULT, "error", None)
    assert rebuilt.repaired_tool_calls == ("toolu_1",)
    assert find_faults(rebuilt.messages) == []


def test_it_keeps_parallel_results_together_when_one_is_missing():
    records = chain(
        ("user", "Compare Q2 and Q3"),
        ("assistant", "", calls("toolu_1", "toolu_2")),
        ("tool", "Q2 numbers", result("toolu_2")),
        ("user", "Are you still there?", {"turn": 2}),
        ("assistant", "Yes."),
    )

    rebuilt = rebuild_messages(records)

    assert shape(rebuilt.messages) == [
        ("human", "Compare Q2 and Q3"),
        ("ai", ""),
        ("tool", "toolu_2"),
        ("tool", "toolu_1"),
        ("human", "Are you still there?"),
        ("ai", "Yes."),
    ]
    assert rebuilt.messages[3].content == INTERRUPTED_TOOL_RESULT
    assert rebuilt.repaired_tool_calls == ("toolu_1",)
    assert find_faults(rebuilt.messages) == []


def test_it_leaves_orphan_duplicate_and_late_results_out_of_the_prompt_only():
    records = chain(
        ("user", "Which category?"),
        ("tool", "nobody asked", result("toolu_9")),
        ("assistant", "", calls("toolu_1")),
        ("tool", "first", result("toolu_1")),
        ("tool", "again", result("toolu_1")),
        ("assistant", "", calls("toolu_2")),
        ("assistant", "Let me think."),
        ("tool", "too late", result("toolu_2")),
        ("assistant", "Music."),
    )

    rebuilt = rebuild_messages(records)

    assert rebuilt.dropped_tool_results == ("toolu_9", "toolu_1", "toolu_2")
    assert rebuilt.repaired_tool_calls == ("toolu_2",)
    assert [m.content for m in rebuilt.messages if isinstance(m, ToolMessage)] == ["first", INTERRUPTED_TOOL_RESULT]
    assert len(records) == 9  # the store itself is untouched
    assert find_faults(rebuilt.messages) == []


def test_it_never_sends_a_notice_to_the_model():
    records = chain(
        ("user", "Hi"),
        ("assistant", "", calls("toolu_1")),
        ("notice", "💡 This conversation is getting long."),
        ("tool", "done", result("toolu_1")),
        ("assistant", "Hello."),
    )

    rebuilt = rebuild_messages(records)

    assert shape(rebuilt.messages) == [("human", "Hi"), ("ai", ""), ("tool", "toolu_1"), ("ai", "Hello.")]
    assert rebuilt.dropped_tool_results == ()


def test_it_leaves_out_empty_steps_and_everything_before_the_first_instruction():
    records = chain(
        ("notice", "Imported conversation"),
        ("assistant", "I was mid-sentence"),
        ("tool", "stale", result("toolu_0")),
        ("user", "   "),
        ("user", "Which category?"),
        ("assistant", ""),
        ("user", ""),
        ("assistant", "Music."),
    )

    rebuilt = rebuild_messages(records)

    assert shape(rebuilt.messages) == [("human", "Which category?"), ("ai", "Music.")]
    assert (rebuilt.repaired_tool_calls, rebuilt.dropped_tool_results) == ((), ())


def test_it_rebuilds_nothing_without_an_instruction_and_says_why():
    rebuilt = rebuild_messages(chain(("notice", "Started"), ("assistant", "Hello")))

    assert rebuilt.messages == ()
    assert [f.problem for f in find_faults(rebuilt.messages)] == ["nothing to send: no messages besides system messages"]


def test_it_sends_a_repeated_tool_call_id_once():
    records = chain(("user", "Read it"), ("assistant", "", calls("toolu_1", "toolu_1")), ("tool", "ok", result("toolu_1")))

    rebuilt = rebuild_messages(records)

    assert [c["id"] for c in rebuilt.messages[1].tool_calls] == ["toolu_1"]
    assert find_faults(rebuilt.messages) == []


ROLE_STEPS = st.sampled_from(["user", "assistant", "tool", "notice"])
CALL_IDS = st.sampled_from(["toolu_1", "toolu_2", "toolu_3"])
CONTENTS = st.sampled_from(["", " ", "Music.", "音樂"])


@st.composite
def any_session(draw) -> list[Record]:
    """Any chain at all: crashes, orphans, duplicates, empty steps, notices, parallel and reused call ids."""
    specs = []
    turn = 1
    for role in draw(st.lists(ROLE_STEPS, max_size=30)):
        fields: dict = {"turn": turn}
        if role == "assistant":
            fields["tool_calls"] = tuple(ToolCall(i, "lookup", {}) for i in draw(st.lists(CALL_IDS, max_size=3)))
        if role == "tool":
            fields["tool_call_id"] = draw(CALL_IDS)
        specs.append((role, draw(CONTENTS), fields))
        turn += role == "user"
    return chain(*specs)


@given(any_session())
def test_it_always_rebuilds_a_sequence_claude_accepts(records):
    messages = rebuild_messages(records).messages
    has_instruction = any(r.role == "user" and r.content.strip() for r in records)

    if has_instruction:
        assert find_faults(messages) == []
    else:
        assert messages == ()


@given(any_session())
def test_it_accounts_for_every_tool_result_and_every_tool_call(records):
    rebuilt = rebuild_messages(records)
    sent_results = [m for m in rebuilt.messages if isinstance(m, ToolMessage)]
    sent_calls = [c["id"] for m in rebuilt.messages if isinstance(m, AIMessage) for c in m.tool_calls]
    start = next((i for i, r in enumerate(records) if r.role == "user" and r.content.strip()), len(records))
    stored_results = [r for r in records[start:] if r.role == "tool"]

    assert len(stored_results) == len(sent_results) - len(rebuilt.repaired_tool_calls) + len(rebuilt.dropped_tool_results)
    assert len(sent_calls) == len(sent_results)


# find_faults


def test_it_finds_nothing_wrong_with_a_valid_sequence():
    messages = [
        SystemMessage("You are Mina."),
        HumanMessage("Which category?"),
        AIMessage("", tool_calls=[{"name": "read", "args": {}, "id": "toolu_1", "type": "tool_call"}]),
        ToolMessage("[...]", tool_call_id="toolu_1"),
        AIMessage("Music."),
    ]

    assert find_faults(messages) == []
    validate_messages(messages)


def test_it_names_the_tool_call_left_without_a_result():
    messages = [
        HumanMessage("Which category?"),
        AIMessage("", id="41ab", tool_calls=[{"name": "read", "args": {}, "id": "toolu_1", "type": "tool_call"}]),
        HumanMessage("Hello?"),
    ]

    (fault,) = find_faults(messages)

    assert fault == Fault(1, "41ab", "toolu_1", "tool call toolu_1 has no tool result immediately after it")
    assert str(fault) == "message 1 (ai, id 41ab): tool call toolu_1 has no tool result immediately after it"


def test_it_names_every_unexpected_tool_result():
    call = {"name": "read", "args": {}, "type": "tool_call"}
    messages = [
        HumanMessage("Compare"),
        ToolMessage("orphan", tool_call_id="toolu_0"),
        AIMessage("", tool_calls=[{**call, "id": "toolu_1"}, {**call, "id": "toolu_1"}]),
        ToolMessage("ok", tool_call_id="toolu_1"),
        ToolMessage("again", tool_call_id="toolu_1"),
        ToolMessage("stranger", tool_call_id="toolu_7"),
    ]

    faults = find_faults(messages)

    assert [(f.index, f.tool_call_id) for f in faults] == [(1, "toolu_0"), (2, "toolu_1"), (4, "toolu_1"), (5, "toolu_7")]
    assert "appears twice" in faults[1].problem
    assert "already has a result" in faults[2].problem
    assert "answers no call of message 2" in faults[3].problem


def test_it_names_faults_of_shape_and_content():
    messages = [
        SystemMessage("You are Mina."),
        AIMessage("Hello"),
        HumanMessage(" "),
        SystemMessage("late instructions"),
        AIMessage(""),
        ChatMessage("hi", role="critic"),
    ]

    faults = find_faults(messages)

    assert [(f.index, f.problem) for f in faults] == [
        (1, "the conversation must start with a human message"),
        (2, "human message has no text"),
        (3, "system message after the start of the conversation"),
        (4, "AI message has neither text nor tool calls"),
        (5, "unsupported message type ChatMessage"),
    ]


def test_it_refuses_to_validate_a_sequence_claude_would_reject():
    messages = [AIMessage("", tool_calls=[{"name": "read", "args": {}, "id": "toolu_1", "type": "tool_call"}])]

    with pytest.raises(InvalidSequence) as caught:
        validate_messages(messages)

    assert len(caught.value.faults) == 2
    assert "message 0 (ai): tool call toolu_1 has no tool result immediately after it" in str(caught.value)
    with pytest.raises(InvalidSequence, match="nothing to send"):
        validate_messages([])


def test_it_refuses_a_record_with_an_unknown_role():
    with pytest.raises(ValueError, match="role"):
        Record("a", None, 1, "system")



def test_it_renames_a_tool_call_id_reused_in_a_later_task_so_claude_accepts_it():
    records = chain(
        ("user", "Views?"),
        ("assistant", "", calls("toolu_1")),
        ("tool", "music 41k", result("toolu_1")),
        ("assistant", "Music."),
        ("user", "And now?", {"turn": 2}),
        ("assistant", "", {"turn": 2, **calls("toolu_1")}),
        ("tool", "news 50k", {"turn": 2, **result("toolu_1")}),
        ("assistant", "News.", {"turn": 2}),
    )

    rebuilt = rebuild_messages(records)

    assert shape(rebuilt.messages)[5:7] == [("ai", ""), ("tool", "toolu_1~2")]
    assert rebuilt.messages[5].tool_calls[0]["id"] == "toolu_1~2"
    assert rebuilt.messages[6].content == "news 50k"
    assert find_faults(rebuilt.messages) == []
    reused = [AIMessage("", tool_calls=[{"name": "x", "args": {}, "id": "t", "type": "tool_call"}]), ToolMessage("r", tool_call_id="t")]
    faults = find_faults([HumanMessage("a"), *reused, HumanMessage("b"), *reused])
    assert [(f.index, f.tool_call_id) for f in faults] == [(4, "t")]
    assert "already used by message 1" in faults[0].problem
