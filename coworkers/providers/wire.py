"""Our request in Anthropic's wire format (the Messages API body), and the cost of a call's usage.
Pure: imports only the standard library, langchain_core.messages, coworkers.providers.base, sessions.history and sessions.cache_lifetime (no anthropic, no Django)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from sessions.cache_lifetime import FIVE_MINUTES
from sessions.history import find_faults

from .base import CompletionRequest, Usage, message_text

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}

# Anthropic answers an alias ("claude-sonnet-4-5") with the dated model it resolved to.
_DATED = re.compile(r"-\d{8}$")


COLLEAGUE_ANSWERED = "(A colleague has answered above. Now give your own answer; do not repeat theirs.)"


def to_anthropic(request: CompletionRequest) -> dict[str, Any]:
    """The keyword arguments for client.messages.create/stream.

    Raises ValueError, naming every fault, for a sequence Claude would answer
    with HTTP 400 (a tool call without its result, a result without its call,
    an empty message, ...): such a request is never sent.
    """
    faults = find_faults(request.messages)
    if faults:
        raise ValueError("refusing to send an invalid message sequence:\n" + "\n".join(f"  {f}" for f in faults))

    # find_faults allows system messages only as a leading run; they extend the system blocks.
    leading = 0
    while isinstance(request.messages[leading], SystemMessage):
        leading += 1
    system_texts = [*request.system, *(message_text(m) for m in request.messages[:leading])]
    # Anthropic rejects empty text blocks; an empty layer (no memory yet) simply has no block.
    system = [{"type": "text", "text": text} for text in system_texts if text.strip()]
    breakpoint = cache_control(request.cache_ttl)
    if system:
        # One breakpoint caches tools + system: the most stable prefix.
        system[-1]["cache_control"] = dict(breakpoint)

    turns: list[dict[str, Any]] = []
    last_block: dict[int, dict[str, Any]] = {}  # langchain index -> that message's last block on the wire
    for index in range(leading, len(request.messages)):
        message = request.messages[index]
        role, blocks = _blocks(message)
        if not blocks:
            # find_faults passes a list content whose text blocks are all blank; Claude would not.
            raise ValueError(f"refusing to send an invalid message sequence:\n  message {index}: no text to send")
        if turns and turns[-1]["role"] == role:
            # Consecutive same-role turns merge. A user turn can only open with tool results
            # (they follow an AI message directly), so tool_result blocks stay first.
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
        last_block[index] = blocks[-1]

    if turns[-1]["role"] == "assistant":
        # The request ends with a colleague's answer to this task (several coworkers answer in
        # a shared channel). Claude would take it as the start of its own reply and continue it.
        turns.append({"role": "user", "content": [{"type": "text", "text": COLLEAGUE_ANSWERED}]})

    for index in request.cache_after:
        if index < leading:
            continue  # a system message: the system breakpoint already covers it
        last_block[index]["cache_control"] = dict(breakpoint)

    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_output_tokens,
        "messages": turns,
    }
    if system:
        body["system"] = system
    if request.tools:
        body["tools"] = [
            {"name": spec.name, "description": spec.description, "input_schema": dict(spec.parameters)}
            for spec in request.tools
        ]
    return body


def cache_control(ttl: str) -> dict[str, str]:
    """A breakpoint's cache_control: the 5-minute cache is the API's default (sent without a ttl, as
    it always was); the 1-hour one says so. Every breakpoint of a request gets the same lifetime (the
    API refuses a 1-hour breakpoint after a 5-minute one)."""
    return dict(EPHEMERAL) if ttl == FIVE_MINUTES else {**EPHEMERAL, "ttl": ttl}


def _blocks(message: BaseMessage) -> tuple[str, list[dict[str, Any]]]:
    """The role and content blocks of one langchain message (never empty: find_faults ran first)."""
    if isinstance(message, HumanMessage):
        return "user", _text_blocks(message.content)
    if isinstance(message, ToolMessage):
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
        content = message.content if isinstance(message.content, str) else _text_blocks(message.content)
        if content:
            result["content"] = content  # optional on the wire; an empty text block would be a 400
        if message.status == "error":
            result["is_error"] = True
        return "user", [result]
    if isinstance(message, AIMessage):
        blocks = _text_blocks(message.content, skip=("tool_use",))
        # tool_calls is the truth; tool_use blocks in content (from langchain_anthropic) would duplicate it.
        blocks += [
            {"type": "tool_use", "id": call["id"], "name": call["name"], "input": dict(call["args"])}
            for call in message.tool_calls
        ]
        return "assistant", blocks
    raise ValueError(f"cannot send a {type(message).__name__} to Claude")


def _text_blocks(content: str | Sequence[Any], *, skip: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    # Claude rejects whitespace-only text blocks, so those are left out rather than sent.
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    blocks = []
    for part in content:
        if isinstance(part, str):
            text = part
        elif isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str):
            text = part["text"]
        elif isinstance(part, Mapping) and part.get("type") in skip:
            continue
        else:
            # Sending something we do not understand would be a 400 at best, a silent loss at worst.
            kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
            raise ValueError(f"unsupported content block {kind!r}: only text is sent to Claude")
        if text.strip():
            blocks.append({"type": "text", "text": text})
    return blocks


def cost_usd(model: str, usage: Usage, prices: Mapping[str, Mapping[str, float]]) -> float | None:
    """The cost of usage in US dollars; prices are per million tokens (settings.MODEL_PRICES).

    A dated model name ("claude-sonnet-4-5-20250929") falls back to its alias's
    price. None when the model is not in the table: unknown is not free. Writes to
    the 1-hour cache cost `cache_write_1h`, or twice the input price.
    """
    price = price_of(model, prices)
    if price is None:
        return None
    long_prompt = price.get("long_prompt")
    if long_prompt and usage.total_input_tokens > long_prompt["above_tokens"]:
        price = long_prompt  # the whole call is priced by its prompt's length, output included
    input_price = price["input"]
    # Anthropic's multipliers, for a table that lists only input and output.
    cache_write = price.get("cache_write", input_price * 1.25)
    cache_read = price.get("cache_read", input_price * 0.1)
    cache_write_1h = price.get("cache_write_1h", input_price * 2)
    hour = min(usage.cache_write_1h_tokens, usage.cache_write_tokens)
    total = (
        usage.input_tokens * input_price
        + (usage.cache_write_tokens - hour) * cache_write
        + hour * cache_write_1h
        + usage.cache_read_tokens * cache_read
        + usage.output_tokens * price["output"]
    )
    return total / 1_000_000


def price_of(model: str, prices: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The model's MODEL_PRICES entry; a dated name falls back to its alias's. None when not listed."""
    price = prices.get(model)
    return price if price is not None else prices.get(_DATED.sub("", model))
