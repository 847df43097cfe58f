"""The converter to Anthropic's wire format and the cost of usage: pure, no database, no network."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from coworkers.providers import CompletionRequest, ToolSpec, Usage
from coworkers.providers.wire import cost_usd, to_anthropic

from .fake_anthropic import check_body

PRICES = {
    "claude-haiku-4-5": {"input": 1.0, "cache_write": 1.25, "cache_read": 0.10, "output": 5.0},
    "claude-opus-4-1": {"input": 15.0, "output": 75.0},
}


def call(call_id: str, name: str = "read_document", **args) -> dict:
    return {"id": call_id, "name": name, "args": args or {"title": "Q3 views"}, "type": "tool_call"}


def request(*messages, system=("You are Mina.", "# Long-term memory\n- [preference] short answers"), **kwargs):
    return CompletionRequest(
        purpose="reply", system=system, messages=messages, model="claude-haiku-4-5", max_output_tokens=512, **kwargs
    )


def breakpoints(body: dict) -> list[str]:
    """Where the cache breakpoints are: "system.i" or "messages.i.j"."""
    found = [f"system.{i}" for i, block in enumerate(body.get("system", ())) if "cache_control" in block]
    for i, turn in enumerate(body["messages"]):
        found += [f"messages.{i}.{j}" for j, block in enumerate(turn["content"]) if "cache_control" in block]
    return found


TOOL_TASK = (
    HumanMessage("Which category has the most views?"),
    AIMessage("Let me check.", tool_calls=[call("toolu_1")]),
    ToolMessage("Music: 1,204\nNews: 800", tool_call_id="toolu_1"),
    AIMessage("Music has the most views."),
)


def test_it_puts_tool_results_in_a_user_turn_before_the_next_instruction():
    body = to_anthropic(request(
        HumanMessage("Which category has the most views?"),
        AIMessage("", tool_calls=[call("toolu_1"), call("toolu_2", title="Q2 views")]),
        ToolMessage("Music: 1,204", tool_call_id="toolu_1"),
        ToolMessage("Music: 990", tool_call_id="toolu_2"),
        HumanMessage("# Recalled from earlier in this conversation\n- task 2: launch on 3 March"),
        HumanMessage("And in Q2?"),
    ))
    assert [turn["role"] for turn in body["messages"]] == ["user", "assistant", "user"]
    assistant, results = body["messages"][1]["content"], body["messages"][2]["content"]
    # An AI message with no text sends only its tool calls: an empty text block is a 400.
    assert assistant == [
        {"type": "tool_use", "id": "toolu_1", "name": "read_document", "input": {"title": "Q3 views"}},
        {"type": "tool_use", "id": "toolu_2", "name": "read_document", "input": {"title": "Q2 views"}},
    ]
    assert [block["type"] for block in results] == ["tool_result", "tool_result", "text", "text"]
    assert results[0] == {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Music: 1,204"}
    assert results[3]["text"] == "And in Q2?"
    assert check_body(body) is None


def test_it_merges_consecutive_user_and_assistant_content():
    body = to_anthropic(request(
        HumanMessage("Draft the launch post."),
        HumanMessage("Keep it under 100 words."),
        AIMessage("Here is a draft."),
        AIMessage("Want a shorter one?"),
        HumanMessage("Yes."),
    ))
    assert body["messages"] == [
        {"role": "user", "content": [
            {"type": "text", "text": "Draft the launch post."}, {"type": "text", "text": "Keep it under 100 words."},
        ]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Here is a draft."}, {"type": "text", "text": "Want a shorter one?"},
        ]},
        {"role": "user", "content": [{"type": "text", "text": "Yes."}]},
    ]


def test_a_request_ending_with_a_colleagues_answer_ends_on_the_users_side():
    """Claude continues a final assistant turn as its own text: the second coworker to answer
    a task in a shared channel would carry on the first one's reply."""
    body = to_anthropic(request(HumanMessage("Is the deploy green?"), AIMessage("Yes, all checks passed.")))

    assert [turn["role"] for turn in body["messages"]] == ["user", "assistant", "user"]
    assert "your own answer" in body["messages"][-1]["content"][0]["text"]
    assert check_body(body) is None


def test_it_sends_system_blocks_with_a_breakpoint_after_the_last_one():
    body = to_anthropic(request(HumanMessage("Hi"), system=("persona", "", "memory", "summary")))
    # The empty memory layer has no block (an empty text block is a 400); the order is kept.
    assert body["system"] == [
        {"type": "text", "text": "persona"},
        {"type": "text", "text": "memory"},
        {"type": "text", "text": "summary", "cache_control": {"type": "ephemeral"}},
    ]
    assert "system" not in to_anthropic(request(HumanMessage("Hi"), system=()))


def test_it_puts_a_breakpoint_on_the_last_block_of_the_window():
    body = to_anthropic(request(*TOOL_TASK, HumanMessage("Thanks. And News?"), cache_after=(3,)))
    assert breakpoints(body) == ["system.1", "messages.3.0"]
    assert body["messages"][3]["content"][0]["text"] == "Music has the most views."
    assert check_body(body) is None


def test_it_maps_a_breakpoint_inside_a_merged_turn_to_that_messages_own_block():
    # The window ends on a tool result; the recalled block and the instruction merge after it.
    body = to_anthropic(request(
        TOOL_TASK[0], TOOL_TASK[1], TOOL_TASK[2],
        HumanMessage("# Recalled from earlier in this conversation\n- task 1: drafted copy"),
        HumanMessage("Summarize that."),
        cache_after=(2, 3),
    ))
    user = body["messages"][2]["content"]
    assert [block["type"] for block in user] == ["tool_result", "text", "text"]
    assert ["cache_control" in block for block in user] == [True, True, False]
    assert check_body(body) is None


def test_it_marks_failed_tool_results_as_errors():
    body = to_anthropic(request(
        HumanMessage("Open the Q3 doc."),
        AIMessage("", tool_calls=[call("toolu_9")]),
        ToolMessage("Error: no document called Q3 views", tool_call_id="toolu_9", status="error"),
    ))
    assert body["messages"][2]["content"] == [{
        "type": "tool_result", "tool_use_id": "toolu_9", "content": "Error: no document called Q3 views", "is_error": True,
    }]


def test_it_sends_tools_model_and_max_tokens():
    spec = ToolSpec("read_document", "Read an office document.", {"type": "object", "properties": {"title": {"type": "string"}}})
    body = to_anthropic(request(HumanMessage("Hi"), tools=(spec,)))
    assert body["model"] == "claude-haiku-4-5" and body["max_tokens"] == 512
    assert body["tools"] == [{
        "name": "read_document",
        "description": "Read an office document.",
        "input_schema": {"type": "object", "properties": {"title": {"type": "string"}}},
    }]
    assert "tools" not in to_anthropic(request(HumanMessage("Hi")))


def test_it_reads_text_from_content_blocks_and_leading_system_messages():
    body = to_anthropic(request(
        SystemMessage("channel rules"),
        HumanMessage([{"type": "text", "text": "first"}, "second", {"type": "text", "text": "  "}]),
        AIMessage([{"type": "text", "text": "ok"}, {"type": "tool_use", "id": "toolu_1", "name": "x", "input": {}}],
                  tool_calls=[call("toolu_1")]),
        ToolMessage([{"type": "text", "text": "result"}], tool_call_id="toolu_1"),
    ))
    assert [block["text"] for block in body["system"]][-1] == "channel rules"
    assert body["messages"][0]["content"] == [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]
    # The tool_use block in content is langchain_anthropic's copy of tool_calls: sent once, not twice.
    assert [block["type"] for block in body["messages"][1]["content"]] == ["text", "tool_use"]
    assert body["messages"][2]["content"][0]["content"] == [{"type": "text", "text": "result"}]


def test_it_refuses_content_it_cannot_send():
    with pytest.raises(ValueError, match="image"):
        to_anthropic(request(HumanMessage([{"type": "image", "url": "https://example.com/x.png"}])))


@pytest.mark.parametrize(
    ("messages", "fault"),
    [
        ((HumanMessage("Hi"), AIMessage("", tool_calls=[call("toolu_1")]), HumanMessage("Next")),
         "toolu_1 has no tool result"),
        ((HumanMessage("Hi"), ToolMessage("stray", tool_call_id="toolu_7")), "toolu_7"),
        ((HumanMessage("   "),), "no text"),
        ((AIMessage("I start"), HumanMessage("Hi")), "must start with a human message"),
        ((HumanMessage([{"type": "text", "text": " "}]),), "no text"),
    ],
)
def test_it_refuses_sequences_claude_would_reject(messages, fault):
    with pytest.raises(ValueError, match=fault):
        to_anthropic(request(*messages))


def test_it_prices_usage_per_million_tokens():
    usage = Usage(input_tokens=1_000, cache_write_tokens=20_000, cache_read_tokens=100_000, output_tokens=500)
    expected = (1_000 * 1.0 + 20_000 * 1.25 + 100_000 * 0.10 + 500 * 5.0) / 1_000_000
    assert cost_usd("claude-haiku-4-5", usage, PRICES) == pytest.approx(expected)
    # The API answers an alias with the dated model; it costs the alias's price.
    assert cost_usd("claude-haiku-4-5-20251001", usage, PRICES) == pytest.approx(expected)


def test_it_knows_no_price_for_an_unlisted_model():
    assert cost_usd("claude-unknown-9", Usage(input_tokens=10), PRICES) is None


def test_it_derives_cache_prices_the_table_leaves_out():
    usage = Usage(cache_write_tokens=1_000_000, cache_read_tokens=1_000_000)
    assert cost_usd("claude-opus-4-1", usage, PRICES) == pytest.approx(15.0 * 1.25 + 15.0 * 0.1)


# Whatever valid history the builder hands over, the body is one the API accepts.
words = st.text(alphabet="abc xyz", min_size=1, max_size=12).filter(str.strip)


@st.composite
def histories(draw):
    messages: list = []
    window_end = -1
    tasks = draw(st.integers(1, 4))
    serial = 0
    for task in range(tasks):
        messages.append(HumanMessage(draw(words)))
        for _ in range(draw(st.integers(0, 2))):
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                serial += 1
                calls.append(call(f"toolu_{serial}"))
            messages.append(AIMessage(draw(st.sampled_from(["", "checking"])), tool_calls=calls))
            for item in calls:
                status = draw(st.sampled_from(["success", "error"]))
                messages.append(ToolMessage(draw(st.sampled_from(["", "found it"])), tool_call_id=item["id"], status=status))
        if draw(st.booleans()):
            messages.append(AIMessage(draw(words)))
        if task == tasks - 2:
            window_end = len(messages) - 1
    if draw(st.booleans()):
        messages.append(HumanMessage("# Recalled from earlier in this conversation\n- " + draw(words)))
    system = draw(st.lists(st.sampled_from(["persona", "", "memory", "summary"]), max_size=3))
    return messages, tuple(system), (window_end,) if window_end >= 0 else ()


@given(histories())
def test_it_always_builds_a_body_the_api_accepts(history):
    messages, system, cache_after = history
    body = to_anthropic(request(*messages, system=system, cache_after=cache_after))
    assert check_body(body) is None
    assert len(breakpoints(body)) == (1 if any(s.strip() for s in system) else 0) + len(cache_after)
