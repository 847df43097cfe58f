"""What the benchmark measures: a built request, its cacheable prefix, its cost, where a fact sits.

Pure: standard library only (no Django, no sessions, no strategies); write_results is the one
place that writes a file.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path

# The order a prompt is sent in, most stable first (docs/context.md, "The layers, in order").
LAYER_ORDER = ("system", "memory", "summary", "recent", "recalled", "current")
# Layers, and the messages inside a layer, are joined with a blank line. A strategy that
# wants request n+1 to begin with the whole of request n renders its new messages the
# same way (see strategies.render_record).
SEPARATOR = "\n\n"

# Anthropic's prompt-caching prices, as multiples of the base input price.
CACHE_READ = 0.1
CACHE_WRITE = 1.25

# Where a planted fact can be found; "missing" when no layer holds it.
LOCATIONS = ("memory", "summary", "recent", "recalled", "missing")
# The layers a strategy's budgets cover (memory_chars, summary_chars, detailed_chars, recall_chars):
# the system layer and the current task are outside them.
BUDGETED_LAYERS = ("memory", "summary", "recent", "recalled")


@dataclass
class Request:
    """One prompt as a strategy built it: its layers (name -> text) and how long building took.

    `build_seconds` includes loading the inputs (the database, for the app's builder).
    `folded` is True when this request is the first after older material was folded or
    compressed into a summary: its prefix is expected to differ from the previous request's.
    """

    layers: dict[str, str]
    build_seconds: float
    folded: bool = False
    # Anything a strategy wants recorded beside the numbers (e.g. the app builder's report).
    details: dict = field(default_factory=dict)
    # What the strategy's layer budgets cover, counted as it counts them, when that is not the
    # budgeted layers' text as rendered here (the app's builder counts the messages it sends,
    # not the role prefixes and blank lines this rendering adds to them).
    budgeted_chars: int | None = None

    @cached_property
    def text(self) -> str:
        """The layers that are present and not empty, in LAYER_ORDER, then any others, joined."""
        known = [self.layers[name] for name in LAYER_ORDER if self.layers.get(name)]
        extra = [text for name, text in self.layers.items() if name not in LAYER_ORDER and text]
        return SEPARATOR.join(known + extra)

    @property
    def chars(self) -> int:
        return len(self.text)

    @property
    def budgeted(self) -> int:
        """The characters the layer budgets cover: the strategy's own count, or the budgeted layers' text."""
        if self.budgeted_chars is not None:
            return self.budgeted_chars
        return sum(len(self.layers.get(name) or "") for name in BUDGETED_LAYERS)


def common_prefix_chars(a: str, b: str) -> int:
    """How many leading characters a and b share.

    Linear in C: `startswith` covers the common case (an append-only prompt), and a
    binary search over slice comparisons the rest, so a prompt of millions of
    characters costs milliseconds, not a Python loop per character.
    """
    if b.startswith(a):
        return len(a)
    if a.startswith(b):
        return len(b)
    low, high = 0, min(len(a), len(b))  # invariant: a[:low] == b[:low], a[:high+1] != b[:high+1]
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def cost_units(prompt_chars: int, cached_prefix_chars: int) -> float:
    """The input cost of one request, in units of the base input price per character.

    The cache model: the part of this request that repeats the beginning of the
    previous request (`cached_prefix_chars`) is a cache read at 0.1x; the rest is
    written to the cache at 1.25x (a breakpoint at the end of every request, as
    automatic prompt caching places it). Provider minimum cacheable lengths, the
    5-minute lifetime and output tokens are left out: this compares strategies,
    it is not a bill. A request with no caching at all would cost `prompt_chars`.
    """
    if not 0 <= cached_prefix_chars <= prompt_chars:
        raise ValueError(f"cached prefix {cached_prefix_chars} is outside 0..{prompt_chars}")
    return CACHE_READ * cached_prefix_chars + CACHE_WRITE * (prompt_chars - cached_prefix_chars)


def percentile(values: Iterable[float], p: float) -> float:
    """The p-th percentile (0-100) with linear interpolation between closest ranks (numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    if not 0 <= p <= 100:
        raise ValueError(f"p must be between 0 and 100, got {p}")
    rank = (len(ordered) - 1) * p / 100
    below, above = math.floor(rank), math.ceil(rank)
    return ordered[below] + (ordered[above] - ordered[below]) * (rank - below)


def where_found(layers: Mapping[str, str], needle: str) -> str:
    """The first layer (in LAYER_ORDER, then any others) whose text contains needle, or "missing"."""
    names = [name for name in LAYER_ORDER if name in layers] + [name for name in layers if name not in LAYER_ORDER]
    return next((name for name in names if needle in (layers[name] or "")), "missing")


# CJK ideographs, kana, Hangul, and their punctuation and full-width forms: about a token each.
_CJK = re.compile(r"[\u2e80-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def estimate_tokens(text: str) -> int:
    """About 4 characters a token for alphabetic text, 1 for CJK (the app's own estimate)."""
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def write_results(result: dict, out: str | None, base_dir: Path, name: str) -> Path:
    """Write a run's JSON as `name-<UTC time>.json` in `out`, or benchmarks/results/ under base_dir."""
    directory = Path(out) if out else base_dir / "benchmarks" / "results"
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = directory / f"{name}-{stamp}.json"
    path.write_text(json.dumps(result, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    return path
