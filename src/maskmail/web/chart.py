"""The activity chart: stacked daily bars drawn as SVG on the server (no script)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from markupsafe import Markup, escape

from maskmail.store.activity import Day
from maskmail.store.clock import DAY

KINDS = ("forwarded", "blocked", "spam", "replied")
WIDTH, HEIGHT, AXIS, TOP = 600, 200, 24, 10


def day_label(day: int) -> str:
    return time.strftime("%b %d", time.gmtime(day * DAY))


def totals(days: Sequence[Day]) -> dict[str, int]:
    return {kind: sum(getattr(d, kind) for d in days) for kind in KINDS}


def svg(days: Sequence[Day], title: str) -> Markup:
    """A bar per day, one segment per kind; each segment has a tooltip title, and the
    whole chart a text alternative with the totals."""
    peak = max((sum(getattr(d, k) for k in KINDS) for d in days), default=0) or 1
    step = WIDTH / max(len(days), 1)
    scale = (HEIGHT - AXIS - TOP) / peak
    summary = ", ".join(f"{n} {kind}" for kind, n in totals(days).items())
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(title)}: {summary} in the last {len(days)} days">'
    ]
    for i, d in enumerate(days):
        y = HEIGHT - AXIS
        for kind in KINDS:
            n = getattr(d, kind)
            if not n:
                continue
            h = n * scale
            y -= h
            parts.append(
                f'<rect class="{kind}" x="{i * step + 1:.1f}" y="{y:.1f}" '
                f'width="{step - 2:.1f}" height="{h:.1f}">'
                f"<title>{day_label(d.day)}: {n} {kind}</title></rect>"
            )
        if (len(days) - 1 - i) % 7 == 0:
            parts.append(f'<text x="{i * step + 1:.1f}" y="{HEIGHT - 8}">{day_label(d.day)}</text>')
    parts.append(f'<text x="0" y="{TOP}">{peak} a day at most</text></svg>')
    return Markup("".join(parts))  # noqa: S704 - every value above is a number or escaped
