"""The activity chart: stacked daily bars drawn as SVG on the server (no script).

The chart fills its box's width: horizontal positions are percentages and vertical ones
pixels, so the labels keep their size on a phone and on a wide screen alike. Each day is
a focusable group whose numbers show on hover and on focus; the same numbers are a table
beside the chart (templates/_activity.html).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from itertools import cycle

from markupsafe import Markup, escape

from maskmail.store.activity import Day
from maskmail.store.clock import DAY

KINDS = ("forwarded", "blocked", "spam", "replied")
# Pixels: the drawing's height, the strip under it for dates, the space above it.
HEIGHT, AXIS, TOP = 240, 24, 12
# Percent of the width left of the bars, for the counts.
LEFT = 6.0
TIP_WIDTH, TIP_LINE = 132, 16


def day_label(day: int) -> str:
    return time.strftime("%b %d", time.gmtime(day * DAY))


def totals(days: Sequence[Day]) -> dict[str, int]:
    return {kind: sum(getattr(d, kind) for d in days) for kind in KINDS}


def day_total(day: Day) -> int:
    return sum(getattr(day, kind) for kind in KINDS)


def ticks(peak: int) -> list[int]:
    """Round counts for the grid lines, from 0 to at least ``peak``: steps of 1, 2 or 5
    times a power of ten, four or five of them."""
    step, factors = 1, cycle((2, 2.5, 2))  # 1 → 2 → 5 → 10 → 20 → 50 ...
    while step * 4 < peak:
        step = int(step * next(factors))
    top = -(-max(peak, 1) // step) * step
    return list(range(0, top + 1, step))


def _bar(i: int, d: Day, step: float, scale: float) -> str:
    """One day's bar: a segment per kind, stacked."""
    x = LEFT + i * step
    parts = []
    y = float(HEIGHT - AXIS)
    for kind in KINDS:
        n = getattr(d, kind)
        if n:
            h = n * scale
            y -= h
            parts.append(
                f'<rect class="{kind}" x="{x + step * 0.12:.2f}%" y="{y:.1f}" '
                f'width="{step * 0.76:.2f}%" height="{h:.1f}"/>'
            )
    return "".join(parts)


def _day(i: int, d: Day, step: float, count: int) -> str:
    """One day's hover and focus target, named by its numbers, and its tooltip. Drawn
    over every bar, so that no later bar hides the tooltip (the targets are clear)."""
    x = LEFT + i * step
    numbers = ", ".join(f"{getattr(d, kind)} {kind}" for kind in KINDS)
    label = f"{day_label(d.day)}: {numbers}"
    # The tooltip opens towards the middle, so that it never leaves the chart.
    left_half = i < count / 2
    anchor = x + step if left_half else x
    offset = 4 if left_half else -TIP_WIDTH - 4
    lines = [day_label(d.day), *(f"{getattr(d, k)} {k}" for k in KINDS)]
    tip_height = TIP_LINE * len(lines) + 8
    parts = [
        f'<g class="day" tabindex="0" role="img" aria-label="{escape(label)}">'
        f'<rect class="hit" x="{x:.2f}%" y="{TOP}" width="{step:.2f}%" '
        f'height="{HEIGHT - AXIS - TOP}"/>'
        f'<svg class="tip" x="{anchor:.2f}%" y="{TOP}" overflow="visible">'
        f'<rect x="{offset}" y="0" width="{TIP_WIDTH}" height="{tip_height}" rx="6"/>'
    ]
    for n, line in enumerate(lines):
        weight = ' font-weight="700"' if n == 0 else ""
        parts.append(
            f'<text x="{offset + 10}" y="{TIP_LINE * (n + 1)}"{weight}>{escape(line)}</text>'
        )
    parts.append("</svg></g>")
    return "".join(parts)


def svg(days: Sequence[Day], title: str) -> Markup:
    """The chart, with count gridlines and date labels; a group named by ``title`` and the
    totals, whose days each have their own name."""
    summary = ", ".join(f"{n} {kind}" for kind, n in totals(days).items())
    marks = ticks(max((day_total(d) for d in days), default=0))
    scale = (HEIGHT - AXIS - TOP) / marks[-1]
    step = (100 - LEFT) / max(len(days), 1)
    parts = [
        f'<svg class="chart" width="100%" height="{HEIGHT}" role="group" '
        f'aria-label="{escape(title)}: {summary} in the last {len(days)} days">'
    ]
    for mark in marks:
        y = HEIGHT - AXIS - mark * scale
        css = "axis" if mark == 0 else "grid"
        parts.append(
            f'<line class="{css}" x1="{LEFT:.2f}%" x2="100%" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="count" x="{LEFT - 1:.2f}%" y="{y + 4:.1f}" text-anchor="end" '
            f'aria-hidden="true">{mark}</text>'
        )
    for i, d in enumerate(days):
        # A date under every seventh bar, counted back from today's.
        if (len(days) - 1 - i) % 7 == 0:
            last = i == len(days) - 1
            x = LEFT + (i + 1) * step if last else LEFT + (i + 0.5) * step
            parts.append(
                f'<text class="date" x="{x:.2f}%" y="{HEIGHT - 6}" '
                f'text-anchor="{"end" if last else "middle"}" aria-hidden="true">'
                f"{day_label(d.day)}</text>"
            )
    parts.extend(_bar(i, d, step, scale) for i, d in enumerate(days))
    parts.extend(_day(i, d, step, len(days)) for i, d in enumerate(days))
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - every value above is a number or escaped
