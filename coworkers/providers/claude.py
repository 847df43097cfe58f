"""The Claude provider: one streamed Messages API call per complete(), its usage, and every failure in plain words.
The only module that imports anthropic; must not import Django at module level (settings are read lazily in __init__)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2  # the SDK's transport: a body cut mid-stream surfaces as its error, unwrapped

from sessions.cache_lifetime import ONE_HOUR
from sessions.history import ToolCall

from .base import Completion, CompletionRequest, ProviderError, Usage
from .wire import to_anthropic

DEFAULT_TIMEOUT_SECONDS = 120.0
DEFAULT_MAX_RETRIES = 2

NO_KEY = "No Anthropic API key is set. Set ANTHROPIC_API_KEY."
KEY_REJECTED = "The Anthropic API key was rejected. Check ANTHROPIC_API_KEY."
RATE_LIMITED = "Claude is rate limiting this office right now. Try again in a minute."
OVERLOADED = "Claude is overloaded right now. Try again shortly."
REJECTED = "Claude rejected the request: {}"
TIMED_OUT = "Claude did not answer in time."
UNREACHABLE = "Could not reach Claude ({})."
BROKE_OFF = "The connection to Claude broke off in the middle of the reply."
INVALID_HISTORY = "This conversation's history is not in a shape Claude accepts, so nothing was sent."

_STOP_REASONS = {"end_turn": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens"}

# Error types as they appear in an SSE `error` event, which arrives after a 200 and so has no telling status.
_BY_TYPE = {
    "authentication_error": (KEY_REJECTED, False),
    "permission_error": (KEY_REJECTED, False),
    "rate_limit_error": (RATE_LIMITED, True),
    "overloaded_error": (OVERLOADED, True),
    "api_error": (OVERLOADED, True),
    "timeout_error": (TIMED_OUT, True),
}


class ClaudeProvider:
    """Claude through the anthropic SDK; selected by get_provider() when ANTHROPIC_API_KEY is set.

    Retries are the SDK's (max_retries, honouring retry-after): they cover
    429, 5xx, 529 and connection failures before the first byte of a reply.
    A stream that breaks after it started is not retried here: the caller gets
    a retryable ProviderError with what streamed so far in `partial_text`.
    """

    name = "claude"
    offline = False

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> None:
        api_key = api_key or os.environ.get("ANTHROPIC_API_KEY", "").strip()
        if not api_key:
            raise ProviderError(NO_KEY, detail="ANTHROPIC_API_KEY is not set")
        base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL", "").strip() or None
        if timeout is None:
            timeout = float(_setting("ANTHROPIC_TIMEOUT_SECONDS", DEFAULT_TIMEOUT_SECONDS))
        if max_retries is None:
            max_retries = int(_setting("ANTHROPIC_MAX_RETRIES", DEFAULT_MAX_RETRIES))
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        # An explicit api_key keeps the SDK from looking for profiles or other credentials on disk.
        self.client = anthropic.Anthropic(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )

    def complete(
        self,
        request: CompletionRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> Completion:
        """One streamed call. Text deltas go to on_text as they arrive; should_stop is checked
        before each event (and before sending), and a stop returns the partial text with
        stop_reason "stopped" and no tool calls. Raises ProviderError, always with a
        `partial_text` attribute (the text already sent to on_text; "" if none)."""
        try:
            body = to_anthropic(request)
        except ValueError as error:
            raise _error(INVALID_HISTORY, retryable=False, detail=str(error)) from error

        if should_stop is not None and should_stop():
            return Completion(text="", model=request.model, stop_reason="stopped", cache_ttl=request.cache_ttl)

        parts: list[str] = []
        usage = Usage()
        model = request.model
        finished = started = False
        try:
            with self.client.messages.stream(**body) as stream:
                for event in stream:
                    started = True
                    if should_stop is not None and should_stop():
                        # Leaving the block closes the response: Claude stops generating (and billing).
                        return Completion(
                            text="".join(parts), usage=usage, model=model, stop_reason="stopped", cache_ttl=request.cache_ttl
                        )
                    if event.type == "message_start":
                        model = event.message.model or model
                        usage = _usage(event.message.usage, request.cache_ttl)
                    elif event.type == "message_delta":
                        usage = _merge_delta(usage, event.usage)
                    elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                        parts.append(event.delta.text)
                        if on_text is not None:
                            on_text(event.delta.text)
                    elif event.type == "message_stop":
                        finished = True
                if not finished:
                    # The body ended cleanly but the message never did: as good as a cut.
                    raise _error(BROKE_OFF, retryable=True, detail="stream ended before message_stop", partial=parts)
                message = stream.get_final_message()
        except ProviderError:
            raise
        except anthropic.APIError as error:
            raise self._translate(error, parts, started=started) from error
        except httpx2.TimeoutException as error:
            raise _error(TIMED_OUT, retryable=True, detail=repr(error), partial=parts) from error
        except httpx2.TransportError as error:
            raise _error(BROKE_OFF, retryable=True, detail=repr(error), partial=parts) from error

        calls = tuple(
            ToolCall(id=block.id, name=block.name, args=dict(block.input))
            for block in message.content
            if block.type == "tool_use"
        )
        return Completion(
            text="".join(parts),
            tool_calls=calls,
            usage=_usage(message.usage, request.cache_ttl),
            model=message.model or request.model,
            stop_reason=_STOP_REASONS.get(message.stop_reason or "", "end_turn"),
            cache_ttl=request.cache_ttl,
        )

    def _translate(self, error: anthropic.APIError, parts: list[str], *, started: bool) -> ProviderError:
        detail = str(error)
        # Most specific first: APITimeoutError is an APIConnectionError, OverloadedError an InternalServerError.
        if isinstance(error, anthropic.APITimeoutError):
            return _error(TIMED_OUT, retryable=True, detail=detail, partial=parts)
        if isinstance(error, anthropic.APIConnectionError) and started:
            # Newer SDKs raise a cut in the middle of the stream as a connection error too
            # (older ones let the transport's error through, caught below).
            return _error(BROKE_OFF, retryable=True, detail=detail, partial=parts)
        if isinstance(error, anthropic.APIConnectionError):
            where = f"ANTHROPIC_BASE_URL {self.base_url}" if self.base_url else str(self.client.base_url)
            return _error(UNREACHABLE.format(where), retryable=True, detail=detail, partial=parts)
        if isinstance(error, (anthropic.AuthenticationError, anthropic.PermissionDeniedError)):
            return _error(KEY_REJECTED, retryable=False, detail=detail, partial=parts)
        if isinstance(error, anthropic.RateLimitError):
            return _error(RATE_LIMITED, retryable=True, detail=detail, partial=parts)
        if isinstance(error, anthropic.APIStatusError):
            if isinstance(error, anthropic.InternalServerError) or error.status_code >= 500:
                return _error(OVERLOADED, retryable=True, detail=detail, partial=parts)
            if error.status_code == 408:
                return _error(TIMED_OUT, retryable=True, detail=detail, partial=parts)
            if error.status_code < 400 and error.type in _BY_TYPE:
                # An `error` event mid-stream (status 200): its type is all there is to go on.
                message, retryable = _BY_TYPE[error.type]
                return _error(message, retryable=retryable, detail=detail, partial=parts)
            # 400 and the other 4xx (an unknown model is a 404): the API's own words say what to fix.
            return _error(REJECTED.format(error.api_message or error.message), retryable=False, detail=detail, partial=parts)
        return _error(OVERLOADED, retryable=True, detail=detail, partial=parts)


def _error(user_message: str, *, retryable: bool, detail: str, partial: list[str] | None = None) -> ProviderError:
    error = ProviderError(user_message, retryable=retryable, detail=detail)
    # What already reached on_text: the caller keeps it (and must not stream it twice on a retry).
    error.partial_text = "".join(partial or ())  # type: ignore[attr-defined]
    return error


def _usage(usage: Any, cache_ttl: str) -> Usage:
    written = getattr(usage, "cache_creation_input_tokens", None) or 0
    # The API says how many writes went to the 1-hour cache (billed dearer); without that breakdown,
    # every write went where the request's breakpoints (all one lifetime) asked.
    breakdown = getattr(usage, "cache_creation", None)
    if breakdown is not None and getattr(breakdown, "ephemeral_1h_input_tokens", None) is not None:
        hour = breakdown.ephemeral_1h_input_tokens
    else:
        hour = written if cache_ttl == ONE_HOUR else 0
    return Usage(
        input_tokens=usage.input_tokens or 0,
        cache_write_tokens=written,
        cache_read_tokens=getattr(usage, "cache_read_input_tokens", None) or 0,
        output_tokens=usage.output_tokens or 0,
        cache_write_1h_tokens=min(hour, written),
    )


def _merge_delta(usage: Usage, delta: Any) -> Usage:
    # message_delta counts are cumulative totals; absent ones keep message_start's value.
    return Usage(
        input_tokens=delta.input_tokens if getattr(delta, "input_tokens", None) is not None else usage.input_tokens,
        cache_write_tokens=(
            delta.cache_creation_input_tokens
            if getattr(delta, "cache_creation_input_tokens", None) is not None
            else usage.cache_write_tokens
        ),
        cache_read_tokens=(
            delta.cache_read_input_tokens
            if getattr(delta, "cache_read_input_tokens", None) is not None
            else usage.cache_read_tokens
        ),
        output_tokens=delta.output_tokens if delta.output_tokens is not None else usage.output_tokens,
        cache_write_1h_tokens=usage.cache_write_1h_tokens,  # message_delta carries no breakdown
    )


def _setting(name: str, default: Any) -> Any:
    """A Django setting, or the default when Django is not configured (the module works without it)."""
    try:
        from django.conf import settings
        from django.core.exceptions import ImproperlyConfigured
    except ImportError:
        return default
    try:
        return getattr(settings, name, default)
    except ImproperlyConfigured:
        return default
