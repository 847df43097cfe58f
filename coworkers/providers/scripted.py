"""The scripted provider for tests: each call plays the next step of a script and records its request.
Pure: imports only the standard library, coworkers.providers.base and sessions.history (no Django, no LLM SDK)."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Union

from sessions.history import ToolCall, validate_messages

from .base import Completion, CompletionRequest, Usage, estimate_request_tokens, estimate_tokens, stream_text


@dataclass(frozen=True)
class Reply:
    """Stream text in chunks of chunk_size characters, sleeping delay seconds before each chunk after the first."""

    text: str
    chunk_size: int = 8
    delay: float = 0.0
    stop_reason: str = "end_turn"  # "max_tokens" to play a truncated answer


@dataclass(frozen=True)
class CallTools:
    """Ask for tool calls, after streaming text (if any) the way Reply does."""

    calls: tuple[ToolCall, ...]
    text: str = ""
    chunk_size: int = 8
    delay: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "calls", tuple(self.calls))


@dataclass(frozen=True)
class Fail:
    """Raise this error (a ProviderError, or anything else to play a crash)."""

    error: Exception


Step = Union[Reply, CallTools, Fail, Callable[[CompletionRequest], Union[Completion, Reply, CallTools, Fail]]]


class ScriptExhausted(AssertionError):
    pass


def _chunks(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


class ScriptedProvider:
    """Plays steps in order, one per complete() call; `requests` holds every request received.

    With strict=True (the default) a request whose messages Claude would reject
    raises sessions.history.InvalidSequence, so a test catches what would be an
    HTTP 400 in production.
    """

    name = "scripted"

    def __init__(self, steps: Iterable[Step] = (), *, offline: bool = False, strict: bool = True) -> None:
        self._steps: deque[Step] = deque(steps)
        self.requests: list[CompletionRequest] = []
        self.offline = offline
        self.strict = strict
        # Background work may call the provider from several threads at once.
        self._lock = threading.Lock()

    def add(self, *steps: Step) -> None:
        with self._lock:
            self._steps.extend(steps)

    @property
    def remaining(self) -> int:
        return len(self._steps)

    def complete(
        self,
        request: CompletionRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> Completion:
        if self.strict:
            validate_messages(request.messages)
        with self._lock:
            self.requests.append(request)
            if not self._steps:
                raise ScriptExhausted(
                    f"ScriptedProvider ran out of steps at call {len(self.requests)} "
                    f"(purpose {request.purpose!r}, instruction {request.instruction[:80]!r}); add more steps"
                )
            step = self._steps.popleft()
        if callable(step) and not isinstance(step, (Reply, CallTools, Fail)):
            step = step(request)
            if isinstance(step, Completion):
                # Like Claude, a model's answer carries the cache lifetime its request asked for.
                return step if step.cache_ttl or self.offline else replace(step, cache_ttl=request.cache_ttl)
        return self._play(step, request, on_text=on_text, should_stop=should_stop)

    def _play(
        self,
        step: Reply | CallTools | Fail,
        request: CompletionRequest,
        *,
        on_text: Callable[[str], None] | None,
        should_stop: Callable[[], bool] | None,
    ) -> Completion:
        if isinstance(step, Fail):
            raise step.error
        if not isinstance(step, (Reply, CallTools)):
            raise TypeError(f"a script step must be Reply, CallTools, Fail or a callable, got {step!r}")
        text, stopped = stream_text(
            _chunks(step.text, step.chunk_size), on_text=on_text, should_stop=should_stop, delay=step.delay
        )
        calls = step.calls if isinstance(step, CallTools) and not stopped else ()
        if stopped:
            stop_reason = "stopped"
        elif isinstance(step, CallTools):
            stop_reason = "tool_use"
        else:
            stop_reason = step.stop_reason
        output = estimate_tokens(text) + sum(
            estimate_tokens(call.name) + estimate_tokens(json.dumps(dict(call.args), ensure_ascii=False))
            for call in calls
        )
        return Completion(
            text=text,
            tool_calls=calls,
            usage=Usage(input_tokens=estimate_request_tokens(request), output_tokens=output),
            model=request.model,
            stop_reason=stop_reason,
            cache_ttl="" if self.offline else request.cache_ttl,
        )


class PacedProvider(ScriptedProvider):
    """The scripted provider for load tests and streaming demos (MODEL_PROVIDER=paced): every reply
    is the same length and streams at the same pace, so timings measure the office, not a model.

    Folds, memory extraction and routing are answered by the offline responder (they need real
    content); nothing is recorded, so a long run does not grow in memory.
    """

    name = "paced"
    offline = True

    def __init__(self, *, reply_chars: int = 400, chunk_chars: int = 20, chunk_delay: float = 0.02) -> None:
        super().__init__(strict=False, offline=True)  # the base would set it False over the class's
        self.reply_chars, self.chunk_chars, self.chunk_delay = reply_chars, chunk_chars, chunk_delay
        from .offline import OfflineResponder  # the offline responder imports nothing of ours

        self._offline = OfflineResponder()

    def complete(
        self,
        request: CompletionRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> Completion:
        if request.purpose != "reply":
            return self._offline.complete(request, on_text=on_text, should_stop=should_stop)
        opening = f"Paced reply to: {request.instruction[:60]}. "
        filler = "Working through it step by step. " * (self.reply_chars // 30 + 1)
        text = (opening + filler)[: max(self.reply_chars, len(opening))]
        step = Reply(text=text, chunk_size=self.chunk_chars, delay=self.chunk_delay)
        return self._play(step, request, on_text=on_text, should_stop=should_stop)
