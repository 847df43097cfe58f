"""The model providers: the only place that imports an LLM SDK, and get_provider(), which picks one.
Must not import Django models or sessions.services; the Claude provider (and its SDK) is imported only when a key is set."""

from __future__ import annotations

import os

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
]


def get_provider() -> Provider:
    """Claude when ANTHROPIC_API_KEY is set, otherwise the offline responder."""
    if not os.environ.get("ANTHROPIC_API_KEY", "").strip():
        return OfflineResponder()
    try:
        from .claude import ClaudeProvider
    except ModuleNotFoundError as error:
        # Only our own missing module means "not built yet"; a missing SDK inside it must surface as is.
        if error.name != f"{__name__}.claude":
            raise
        raise RuntimeError(
            "ANTHROPIC_API_KEY is set, but the Claude provider (coworkers/providers/claude.py) is not part of "
            "this build yet. Unset ANTHROPIC_API_KEY to use the offline responder."
        ) from error
    return ClaudeProvider()
