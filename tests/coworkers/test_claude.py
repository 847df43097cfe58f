"""The Claude provider through the real anthropic SDK, against a fake Messages API on 127.0.0.1 (no database)."""

from __future__ import annotations

import socket
import time

import pytest
from django.conf import settings
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from coworkers.providers import CompletionRequest, ProviderError, ToolSpec, Usage, get_provider
from coworkers.providers.claude import ClaudeProvider
from coworkers.providers.wire import cost_usd
from sessions.history import ToolCall

from .fake_anthropic import ERRORS, MODEL, Error, Reply, Stall, Tool, texts

PERSONA = "You are Mina, Marketing lead at Acme."
MEMORY = "# Long-term memory\n- [decision] The Pro plan costs $29 per month."
SUMMARY = "# Earlier in this conversation (summary)\n- (task 1) Drafted the landing page."
READ = ToolSpec("read_document", "Read an office document by title.", {
    "type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"],
})


def ask(*messages, **kwargs) -> CompletionRequest:
    kwargs.setdefault("system", (PERSONA, MEMORY, SUMMARY))
    return CompletionRequest(
        purpose="reply", messages=messages, model="claude-haiku-4-5", max_output_tokens=1024, **kwargs
    )


def fail(provider: ClaudeProvider, request: CompletionRequest, **kwargs) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        provider.complete(request, **kwargs)
    return caught.value


def test_it_streams_a_reply_chunk_by_chunk(fake_anthropic):
    fake_anthropic.add(Reply("Music has the most views this quarter.", chunk_size=6))
    chunks: list[str] = []
    completion = ClaudeProvider().complete(ask(HumanMessage("Which category has the most views?")), on_text=chunks.append)
    assert len(chunks) == 7
    assert "".join(chunks) == completion.text == "Music has the most views this quarter."
    assert completion.stop_reason == "end_turn"
    assert completion.tool_calls == ()
    assert completion.model == MODEL
    assert fake_anthropic.requests[0].body["stream"] is True


def test_it_makes_a_tool_call_and_answers_with_its_result(fake_anthropic):
    fake_anthropic.add(
        Reply("Let me check.", tools=[Tool("toolu_01", "read_document", {"title": "Q3 views"})]),
        Reply("Music has the most views."),
    )
    provider = ClaudeProvider()
    question = HumanMessage("Which category has the most views?")
    first = provider.complete(ask(question, tools=(READ,)))
    assert first.stop_reason == "tool_use"
    assert first.text == "Let me check."
    assert first.tool_calls == (ToolCall(id="toolu_01", name="read_document", args={"title": "Q3 views"}),)

    call = {"id": "toolu_01", "name": "read_document", "args": {"title": "Q3 views"}, "type": "tool_call"}
    second = provider.complete(ask(
        question,
        AIMessage(first.text, tool_calls=[call]),
        ToolMessage("Music: 1,204\nNews: 800", tool_call_id="toolu_01"),
        tools=(READ,),
    ))
    assert second.text == "Music has the most views." and second.stop_reason == "end_turn"

    body = fake_anthropic.requests[1].body
    assert body["tools"][0]["name"] == "read_document"
    assert [turn["role"] for turn in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"][1] == {
        "type": "tool_use", "id": "toolu_01", "name": "read_document", "input": {"title": "Q3 views"},
    }
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_01", "content": "Music: 1,204\nNews: 800"},
    ]


def test_it_rides_out_a_rate_limit_with_the_sdks_retry(fake_anthropic):
    fake_anthropic.add(ERRORS["rate_limit"], Reply("Here you go."))
    chunks: list[str] = []
    started = time.monotonic()
    completion = ClaudeProvider().complete(ask(HumanMessage("Hi")), on_text=chunks.append)
    assert completion.text == "Here you go." and "".join(chunks) == "Here you go."
    assert len(fake_anthropic.requests) == 2
    assert fake_anthropic.requests[1].headers["x-stainless-retry-count"] == "1"
    assert time.monotonic() - started < 2  # retry-after-ms was honoured, not the SDK's seconds of backoff


def test_it_gives_up_on_an_overload_storm_with_a_clear_message(fake_anthropic):
    fake_anthropic.add(*[ERRORS["overloaded"]] * 5)
    error = fail(ClaudeProvider(), ask(HumanMessage("Hi")))
    assert error.user_message == "Claude is overloaded right now. Try again shortly."
    assert error.retryable
    assert "529" in error.detail
    assert len(fake_anthropic.requests) == settings.ANTHROPIC_MAX_RETRIES + 1


def test_it_says_the_key_was_rejected(fake_anthropic):
    error = fail(ClaudeProvider(api_key="sk-ant-wrong"), ask(HumanMessage("Hi")))
    assert error.user_message == "The Anthropic API key was rejected. Check ANTHROPIC_API_KEY."
    assert not error.retryable
    assert len(fake_anthropic.requests) == 1  # a bad key is not retried


def test_it_passes_on_the_apis_reason_for_a_rejected_request(fake_anthropic):
    fake_anthropic.add(Error(400, "invalid_request_error", "max_tokens: 999999 > 64000, the maximum for this model"))
    error = fail(ClaudeProvider(), ask(HumanMessage("Hi")))
    assert error.user_message == "Claude rejected the request: max_tokens: 999999 > 64000, the maximum for this model"
    assert not error.retryable
    assert len(fake_anthropic.requests) == 1


def test_it_keeps_the_partial_reply_when_the_connection_is_cut(fake_anthropic):
    fake_anthropic.add(Reply("Music has the most views, then News.", chunk_size=5, cut_after=15))
    chunks: list[str] = []
    error = fail(ClaudeProvider(), ask(HumanMessage("Hi")), on_text=chunks.append)
    assert error.retryable
    assert error.user_message == "The connection to Claude broke off in the middle of the reply."
    assert error.partial_text == "".join(chunks) == "Music has the m"
    # The SDK does not retry a stream that already started: nothing was sent or shown twice.
    assert len(fake_anthropic.requests) == 1


def test_it_treats_a_stream_that_ends_without_its_end_as_cut(fake_anthropic):
    fake_anthropic.add(Reply("Music has the most views.", cut_after=8, clean=True))
    error = fail(ClaudeProvider(), ask(HumanMessage("Hi")))
    assert error.retryable and error.partial_text == "Music ha"


def test_it_maps_an_error_event_after_the_stream_started(fake_anthropic):
    fake_anthropic.add(Reply("Music has the most views.", cut_after=5, error_event=ERRORS["overloaded"]))
    error = fail(ClaudeProvider(), ask(HumanMessage("Hi")))
    assert error.user_message == "Claude is overloaded right now. Try again shortly."
    assert error.retryable and error.partial_text == "Music"


def test_it_stops_mid_stream_and_returns_what_it_has(fake_anthropic):
    fake_anthropic.add(Reply(
        "A long answer that the user stops halfway through.", chunk_size=5,
        tools=[Tool("toolu_01", "read_document", {"title": "x"})],
    ))
    chunks: list[str] = []
    completion = ClaudeProvider().complete(
        ask(HumanMessage("Hi"), tools=(READ,)), on_text=chunks.append, should_stop=lambda: len(chunks) >= 2
    )
    assert completion.stop_reason == "stopped"
    assert completion.text == "".join(chunks) == "A long ans"
    assert completion.tool_calls == ()  # a stopped reply never acts
    assert completion.usage.input_tokens == 12  # message_start's usage: the input is billed anyway


def test_it_sends_nothing_when_stopped_before_it_starts(fake_anthropic):
    completion = ClaudeProvider().complete(ask(HumanMessage("Hi")), should_stop=lambda: True)
    assert completion.stop_reason == "stopped" and completion.text == ""
    assert fake_anthropic.requests == []


def test_it_sends_the_prompt_layers_as_cached_system_blocks_and_marks_the_window(fake_anthropic):
    fake_anthropic.add(Reply("Done."))
    window = (HumanMessage("Draft the launch post."), AIMessage("Here is the draft: ..."))
    ClaudeProvider().complete(ask(*window, HumanMessage("Make it shorter."), cache_after=(1,)))

    body = fake_anthropic.requests[0].body
    assert texts(body["system"]) == [PERSONA, MEMORY, SUMMARY]
    assert [block.get("cache_control") for block in body["system"]] == [None, None, {"type": "ephemeral"}]
    assistant = body["messages"][1]["content"]
    assert assistant == [{"type": "text", "text": "Here is the draft: ...", "cache_control": {"type": "ephemeral"}}]
    # The current instruction is after the breakpoint: it changes every task.
    assert body["messages"][2]["content"] == [{"type": "text", "text": "Make it shorter."}]


def test_it_records_usage_and_its_cost(fake_anthropic):
    fake_anthropic.add(Reply(
        "Done.", input_tokens=300, cache_write_tokens=2_000, cache_read_tokens=10_000, output_tokens=80,
    ))
    completion = ClaudeProvider().complete(ask(HumanMessage("Hi")))
    assert completion.usage == Usage(
        input_tokens=300, cache_write_tokens=2_000, cache_read_tokens=10_000, output_tokens=80
    )
    haiku = settings.MODEL_PRICES["claude-haiku-4-5"]
    expected = (
        300 * haiku["input"] + 2_000 * haiku["cache_write"] + 10_000 * haiku["cache_read"] + 80 * haiku["output"]
    ) / 1_000_000
    # The reply names the dated model; it is priced as its alias.
    assert cost_usd(completion.model, completion.usage, settings.MODEL_PRICES) == pytest.approx(expected)


def test_it_reports_max_tokens(fake_anthropic):
    fake_anthropic.add(Reply("The list goes on and", stop_reason="max_tokens"))
    assert ClaudeProvider().complete(ask(HumanMessage("List everything."))).stop_reason == "max_tokens"


def test_it_says_when_claude_did_not_answer_in_time(fake_anthropic):
    fake_anthropic.add(Stall(1.5, then=Reply("too late")))
    error = fail(ClaudeProvider(timeout=0.3, max_retries=0), ask(HumanMessage("Hi")))
    assert error.user_message == "Claude did not answer in time."
    assert error.retryable


def test_it_names_the_base_url_it_could_not_reach(monkeypatch):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = ClaudeProvider(api_key="sk-ant-x", base_url=f"http://127.0.0.1:{port}", max_retries=0)
    error = fail(provider, ask(HumanMessage("Hi")))
    assert error.user_message == f"Could not reach Claude (ANTHROPIC_BASE_URL http://127.0.0.1:{port})."
    assert error.retryable


def test_it_refuses_to_send_an_invalid_history(fake_anthropic):
    dangling = AIMessage("", tool_calls=[{"id": "toolu_1", "name": "read_document", "args": {}, "type": "tool_call"}])
    error = fail(ClaudeProvider(), ask(HumanMessage("Hi"), dangling, HumanMessage("Next")))
    assert not error.retryable and "toolu_1" in error.detail
    assert fake_anthropic.requests == []


def test_it_reads_its_limits_from_settings(fake_anthropic, settings):
    settings.ANTHROPIC_TIMEOUT_SECONDS = 7.5
    settings.ANTHROPIC_MAX_RETRIES = 4
    provider = ClaudeProvider()
    assert (provider.client.timeout, provider.client.max_retries) == (7.5, 4)
    assert str(provider.client.base_url).rstrip("/") == fake_anthropic.base_url


def test_get_provider_picks_claude_when_a_key_is_set(fake_anthropic):
    provider = get_provider()
    assert isinstance(provider, ClaudeProvider)
    assert provider.name == "claude" and not provider.offline
    fake_anthropic.add(Reply("Hello from the fake."))
    assert provider.complete(ask(HumanMessage("Hi"))).text == "Hello from the fake."


def test_it_asks_for_the_hour_long_cache_on_every_breakpoint_when_chosen(fake_anthropic):
    fake_anthropic.add(Reply("Done.", input_tokens=50, cache_write_tokens=4_000, cache_read_tokens=0, output_tokens=20))
    window = (HumanMessage("Draft the launch post."), AIMessage("Here is the draft: ..."))
    completion = ClaudeProvider().complete(
        ask(*window, HumanMessage("Make it shorter."), cache_after=(1, 2), cache_ttl="1h")
    )

    body = fake_anthropic.requests[0].body
    hour = {"type": "ephemeral", "ttl": "1h"}
    assert body["system"][-1]["cache_control"] == hour
    assert body["messages"][1]["content"][-1]["cache_control"] == hour
    assert body["messages"][2]["content"][-1]["cache_control"] == hour
    # The API's usage breaks the writes down by lifetime; the 1-hour ones are billed at 2x input.
    assert completion.cache_ttl == "1h"
    assert completion.usage.cache_write_tokens == completion.usage.cache_write_1h_tokens == 4_000
    haiku = settings.MODEL_PRICES["claude-haiku-4-5"]
    expected = (50 * haiku["input"] + 4_000 * 2 * haiku["input"] + 20 * haiku["output"]) / 1_000_000
    assert cost_usd(completion.model, completion.usage, settings.MODEL_PRICES) == pytest.approx(expected)


def test_the_five_minute_cache_is_the_apis_default_and_sent_without_a_ttl(fake_anthropic):
    fake_anthropic.add(Reply("Done.", input_tokens=50, cache_write_tokens=4_000))
    completion = ClaudeProvider().complete(ask(HumanMessage("Hi"), cache_after=(0,)))

    body = fake_anthropic.requests[0].body
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][0]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert completion.cache_ttl == "5m" and completion.usage.cache_write_1h_tokens == 0
    haiku = settings.MODEL_PRICES["claude-haiku-4-5"]
    expected = (50 * haiku["input"] + 4_000 * haiku["cache_write"] + 7 * haiku["output"]) / 1_000_000
    assert cost_usd(completion.model, completion.usage, settings.MODEL_PRICES) == pytest.approx(expected)


def test_a_request_refuses_a_lifetime_the_api_does_not_offer():
    with pytest.raises(ValueError, match="cache_ttl"):
        ask(HumanMessage("Hi"), cache_ttl="1d")
