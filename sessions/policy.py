"""The context policy as a plain value: budgets that shape every prompt.

Pure: no ORM import. sessions.models stores policies; this module says what
they mean, their sane ranges, and how overrides layer over a channel kind's row.
"""

from dataclasses import dataclass, fields, replace
from typing import Any, Mapping

from .cache_lifetime import AUTO, SETTINGS as CACHE_LIFETIMES

# Sane ranges for each budget: (minimum, maximum). Zero and negatives are never allowed,
# except recall_chars = 0, which turns relevance recall off.
RANGES: dict[str, tuple[int, int]] = {
    "detailed_tasks": (1, 200),
    "detailed_chars": (1_000, 1_000_000),
    "fold_batch": (1, 50),
    "summary_chars": (200, 200_000),
    "memory_chars": (100, 200_000),
    "tool_digest_chars": (40, 20_000),
    "nudge_after_tasks": (2, 10_000),
    "max_output_tokens": (64, 64_000),
    "recall_chars": (0, 50_000),  # 0 turns relevance recall off
}

BUDGET_FIELDS = tuple(RANGES)
MODEL_FIELDS = ("reply_model", "summary_model")
# How long the model provider caches a reply's prompt: "auto" (from the conversation's pauses), "5m" or "1h".
CACHE_FIELD = "cache_lifetime"


@dataclass(frozen=True)
class Policy:
    detailed_tasks: int = 8
    detailed_chars: int = 16_000
    fold_batch: int = 4
    summary_chars: int = 6_000
    memory_chars: int = 4_000
    tool_digest_chars: int = 300
    nudge_after_tasks: int = 20
    max_output_tokens: int = 2_048
    recall_chars: int = 3_000
    # Empty: the office's models (settings.REPLY_MODEL, SUMMARY_MODEL), filled in by prompts.resolve_policy.
    reply_model: str = ""
    summary_model: str = ""
    cache_lifetime: str = AUTO


def default_policy(channel_kind: str) -> Policy:
    """The defaults: a 1:1 gets a larger detailed window than shared channels."""
    return Policy(detailed_chars=20_000) if channel_kind == "direct" else Policy()


def with_overrides(base: Policy, overrides: Mapping[str, Any]) -> Policy:
    """`base` with every override that is set (None and "" mean "inherit")."""
    names = {f.name for f in fields(Policy)}
    changes = {k: v for k, v in overrides.items() if k in names and v not in (None, "")}
    return replace(base, **changes)


def find_problems(values: Mapping[str, Any]) -> dict[str, str]:
    """Field name -> a message a person can act on, for every value out of range.

    Values that are None (an override that inherits) are not checked.
    """
    problems: dict[str, str] = {}
    for name, (low, high) in RANGES.items():
        value = values.get(name)
        if value is None:
            continue
        if value < low or value > high:
            problems[name] = f"Must be between {low:,} and {high:,}; got {value:,}."
    detailed, digest = values.get("detailed_chars"), values.get("tool_digest_chars")
    if detailed is not None and digest is not None and "detailed_chars" not in problems and detailed < digest:
        problems["detailed_chars"] = (
            f"The detailed budget ({detailed:,} characters) cannot be smaller than the "
            f"tool digest ({digest:,}): not even one digested tool result would fit."
        )
    lifetime = values.get(CACHE_FIELD)
    if lifetime not in (None, "", *CACHE_LIFETIMES):
        problems[CACHE_FIELD] = f"Must be one of {', '.join(CACHE_LIFETIMES)}; got {lifetime!r}."
    fold, tasks = values.get("fold_batch"), values.get("detailed_tasks")
    if fold is not None and tasks is not None and "fold_batch" not in problems and fold > tasks:
        problems["fold_batch"] = f"The fold batch ({fold}) cannot be larger than the detailed tasks ({tasks})."
    return problems
