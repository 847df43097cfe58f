"""Charts drawn on the server as inline SVG: no script, no chart library, no build step.

Pure: no ORM import. Text and grid lines use currentColor, so a chart follows the page's light or
dark colours; every name that goes in is escaped, and only checked hex colours reach a fill.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

# The viewBox: the chart scales to its box's width (CSS width 100%). Narrow enough that on a phone, with
# the larger text app.css gives it there, a label is still about 10 px; LEFT leaves room for "$0.50".
WIDTH, HEIGHT = 560, 220
LEFT, RIGHT, TOP, BOTTOM = 72, 12, 16, 32
# The largest a label is drawn (app.css, on a phone), in viewBox units, and a character's width at that size.
LABEL_SIZE, CHAR_WIDTH = 18, 0.6
HEX = re.compile(r"^#[0-9a-fA-F]{6}$")
FALLBACK_COLOUR = "#6366f1"


@dataclass(frozen=True)
class Segment:
    """One part of a bar: a coworker's share of a day."""

    name: str
    colour: str
    value: float
    label: str  # the value as people read it ("12k tokens", "$0.42")


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 times a power of ten at or above value, so the axis reads in round numbers."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power + 1e-12:
            return step * power
    return 10 * power


def stacked_bars(
    *,
    title: str,
    labels: Sequence[str],
    bars: Sequence[Sequence[Segment]],
    axis_label: Callable[[float], str],
    empty_text: str = "Nothing used in this range.",
) -> str:
    """One bar per label (a day), stacked by segment (coworker), with a y axis of three round values.

    Each segment has a <title>, so pointing at it tells whose it is and how much; the whole chart is
    an image with the given title for screen readers (the tables beside it hold the same figures).
    """
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    top = nice_ceiling(max((sum(s.value for s in bar) for bar in bars), default=0))
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    ]
    for fraction in (0, 0.5, 1):
        y = TOP + plot_h * (1 - fraction)
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="currentColor" '
            f'stroke-opacity="{0.35 if fraction == 0 else 0.12}"/>'
            f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end" fill="currentColor" font-size="12">'
            f"{escape(axis_label(top * fraction))}</text>"
        )
    count = max(len(labels), 1)
    slot = plot_w / count
    width = max(min(slot * 0.62, 48), 2)
    # A label on every day up to ten, else about eight; fewer when a label would run into the next one.
    widest = max((len(label) for label in labels), default=0) * LABEL_SIZE * CHAR_WIDTH
    every = max(1 if count <= 10 else math.ceil(count / 8), math.ceil(widest / slot))
    for index, (label, bar) in enumerate(zip(labels, bars)):
        x = LEFT + slot * index + (slot - width) / 2
        y = TOP + plot_h
        for segment in bar:
            if segment.value <= 0:
                continue
            height = plot_h * segment.value / top
            y -= height
            colour = segment.colour if HEX.match(segment.colour or "") else FALLBACK_COLOUR
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{max(height, 0.5):.1f}" fill="{colour}">'
                f"<title>{escape(segment.name)}, {escape(label)}: {escape(segment.label)}</title></rect>"
            )
        if index % every == 0:
            parts.append(
                f'<text x="{x + width / 2:.1f}" y="{HEIGHT - 10}" text-anchor="middle" fill="currentColor" '
                f'font-size="12">{escape(label)}</text>'
            )
    if not any(s.value > 0 for bar in bars for s in bar):
        parts.append(
            f'<text x="{LEFT + plot_w / 2:.1f}" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" '
            f'fill="currentColor" fill-opacity="0.7" font-size="14">{escape(empty_text)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
