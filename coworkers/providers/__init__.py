"""The model providers: the only place that imports an LLM SDK, and get_provider(), which picks one.
Must not import Django models or sessions.services; the Claude provider (and its SDK) is imported only when a key is set."""

from __future__ import annotations

import os

from django.conf import settings

from .base import (
    Completion,
    CompletionRequest,
    Provider,
    ProviderError,
    ToolSpec,
    Usage,
    estimate_message_tokens,
    estimate_request_tokens,
    estimate_tokens,
)
from .offline import OfflineResponder

__all__ = [
    "ANSWERED_WITHOUT_A_MODEL",
    "Completion",
    "CompletionRequest",
    "OfflineResponder",
    "Provider",
    "ProviderError",
    "ToolSpec",
    "Usage",
    "estimate_message_tokens",
    "estimate_request_tokens",
    "estimate_tokens",
    "get_provider",
    "offline_responder_answers",
]

# The providers (Task.provider) whose replies no model wrote: the offline responder's and the paced
# load-test filler. Nothing they say is a fact to summarize, and they cost nothing.
ANSWERED_WITHOUT_A_MODEL = ("offline", "paced")


def offline_responder_answers() -> bool:
    """Whether the offline responder answers here (what get_provider picks), without building a provider."""
    choice = getattr(settings, "MODEL_PROVIDER", "auto")
    return choice == "offline" or (choice == "auto" and not os.environ.get("ANTHROPIC_API_KEY", "").strip())


def get_provider() -> Provider:
    """By MODEL_PROVIDER: "auto" (the default) is Claude when ANTHROPIC_API_KEY is set, otherwise
    the offline responder; "offline", "claude" and "paced" (fixed replies at a fixed pace) force one."""
    choice = getattr(settings, "MODEL_PROVIDER", "auto")
    if choice == "paced":
        from .scripted import PacedProvider

        return PacedProvider(reply_chars=settings.PACED_REPLY_CHARS, chunk_delay=settings.PACED_CHUNK_MS / 1000)
    if offline_responder_answers():
        return OfflineResponder()
    # Imported only now: without a key, nothing loads the anthropic SDK.
    from .claude import ClaudeProvider

    return ClaudeProvider()
