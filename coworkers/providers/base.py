"""The provider interface: what every model call sends and gets back, and rough token estimates.
Pure: imports only the standard library, langchain_core.messages and pure sessions modules (no Django, no LLM SDK)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from langchain_core.messages import BaseMessage

from sessions.cache_lifetime import FIVE_MINUTES, LIFETIMES
from sessions.history import ToolCall
from sessions.tokens import estimate_tokens  # re-exported: one estimate for budgets, reports and usage

PURPOSES = ("reply", "fold", "extract", "route")
STOP_REASONS = ("end_turn", "tool_use", "max_tokens", "stopped")

# Anthropic allows 4 cache_control breakpoints per request; one goes after the system blocks.
MAX_MESSAGE_BREAKPOINTS = 3


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: Mapping[str, Any]  # a JSON schema object (Anthropic's input_schema)


@dataclass(frozen=True)
class CompletionRequest:
    """One model call, provider-neutral; the Claude provider maps it onto the Messages API.

    system: system blocks, most stable first (persona and office, memory,
    summary); a cache breakpoint goes after the last one, so whatever changes
    least must come first. messages: langchain-core Human/AI/Tool messages,
    already valid (sessions.history.validate_messages). cache_after: indices of
    messages after which a cache breakpoint goes (for a reply: the end of the
    detailed window and the last message), at most 3. cache_ttl: how long every
    breakpoint of the request is kept, "5m" or "1h" (sessions.cache_lifetime).

    payload: structured input, so the offline responder never parses prose:
      fold:    {"previous": str, "tasks": [TaskRecords, ...], "max_chars": int, "multi_speaker": bool,
                "answered_offline": the turns no model answered (optional)}
      extract: {"task": TaskRecords, "answered_offline": bool (optional: its replies are no facts)}
      route:   {"instruction": str, "coworkers": [{"slug", "name", "role", "skills"}, ...],
                "channel_kind": str (optional)}
      reply:   {"turns": the detailed tasks' turns, oldest first (the prompt report's
                "detailed_tasks"), "said_on": the day each of them was asked (ISO date or None),
                "channel_kind": str} (optional; lets the offline responder say "you said this
                on Dec 1", answer in one line in all-hands and speak to a meeting's agenda)
    """

    purpose: str
    system: tuple[str, ...]
    messages: tuple[BaseMessage, ...]
    model: str
    max_output_tokens: int
    tools: tuple[ToolSpec, ...] = ()
    cache_after: tuple[int, ...] = ()
    payload: Mapping[str, Any] = field(default_factory=dict)
    cache_ttl: str = FIVE_MINUTES

    def __post_init__(self) -> None:
        if self.purpose not in PURPOSES:
            raise ValueError(f"purpose must be one of {', '.join(PURPOSES)}, got {self.purpose!r}")
        # Lists are accepted for convenience; stored as tuples so a request cannot change after it is sent.
        for name in ("system", "messages", "tools", "cache_after"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.cache_ttl not in LIFETIMES:
            raise ValueError(f"cache_ttl must be one of {', '.join(LIFETIMES)}, got {self.cache_ttl!r}")
        if self.max_output_tokens < 1:
            raise ValueError(f"max_output_tokens must be positive, got {self.max_output_tokens}")
        if len(self.cache_after) > MAX_MESSAGE_BREAKPOINTS:
            raise ValueError(f"at most {MAX_MESSAGE_BREAKPOINTS} message cache breakpoints, got {len(self.cache_after)}")
        for index in self.cache_after:
            if not 0 <= index < len(self.messages):
                raise ValueError(f"cache_after index {index} is outside the {len(self.messages)} messages")

    @property
    def instruction(self) -> str:
        """The text of the last human message: the current instruction for a reply."""
        for message in reversed(self.messages):
            if message.type == "human":
                return message_text(message)
        return ""


@dataclass(frozen=True)
class Usage:
    """Tokens of one call, as Anthropic reports them: input_tokens excludes the cached ones.
    cache_write_1h_tokens is the part of cache_write_tokens written to the 1-hour cache (dearer)."""

    input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    cache_write_1h_tokens: int = 0

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_write_tokens + self.cache_read_tokens

    def __add__(self, other: Usage) -> Usage:
        # A task's tool loop makes several calls; its usage is their sum.
        return Usage(
            self.input_tokens + other.input_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_write_1h_tokens + other.cache_write_1h_tokens,
        )


@dataclass(frozen=True)
class Completion:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    model: str = ""
    stop_reason: str = "end_turn"
    # The cache lifetime the call asked for ("5m", "1h"); "" when no model cache was involved (offline).
    cache_ttl: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if self.stop_reason not in STOP_REASONS:
            raise ValueError(f"stop_reason must be one of {', '.join(STOP_REASONS)}, got {self.stop_reason!r}")


class ProviderError(Exception):
    """A model call that failed. user_message is what people see, in plain words; detail is for logs."""

    def __init__(self, user_message: str, *, retryable: bool = False, detail: str = "") -> None:
        super().__init__(detail or user_message)
        self.user_message = user_message
        self.retryable = retryable
        self.detail = detail


@runtime_checkable
class Provider(Protocol):
    name: str
    offline: bool  # True when no model answers (the UI labels such replies)

    def complete(
        self,
        request: CompletionRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> Completion:
        """Run one call. Streamed text goes to on_text chunk by chunk, and the
        chunks concatenate to Completion.text. should_stop is checked between
        chunks; once it returns True the provider stops and returns what it has,
        with stop_reason "stopped" (and no tool calls). Raises ProviderError."""
        ...


def message_text(message: BaseMessage) -> str:
    """The text of a message, whether its content is a string or a list of content blocks."""
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


def estimate_message_tokens(messages: Sequence[BaseMessage]) -> int:
    """Like langchain's count_tokens_approximately: each message's text (and tool calls) plus 3."""
    total = 0
    for message in messages:
        total += 3 + estimate_tokens(message_text(message))
        for call in getattr(message, "tool_calls", None) or ():
            total += estimate_tokens(call["name"]) + estimate_tokens(json.dumps(call["args"], ensure_ascii=False))
    return total


def estimate_request_tokens(request: CompletionRequest) -> int:
    """Rough input tokens of a request: system blocks, messages and tool definitions."""
    tools = sum(
        estimate_tokens(spec.name + spec.description + json.dumps(spec.parameters, ensure_ascii=False))
        for spec in request.tools
    )
    return sum(estimate_tokens(block) for block in request.system) + estimate_message_tokens(request.messages) + tools


def stream_text(
    chunks: Iterable[str],
    *,
    on_text: Callable[[str], None] | None,
    should_stop: Callable[[], bool] | None,
    delay: float = 0.0,
) -> tuple[str, bool]:
    """Send chunks to on_text, checking should_stop before each one (a stop that came before the
    first chunk sends nothing); return (the text sent, whether it stopped)."""
    sent: list[str] = []
    for index, chunk in enumerate(chunks):
        if index and delay:
            time.sleep(delay)
        if should_stop is not None and should_stop():
            return "".join(sent), True
        sent.append(chunk)
        if on_text is not None:
            on_text(chunk)
    return "".join(sent), False
