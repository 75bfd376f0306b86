"""Limits counted over a moving day: what a user may do some number of times in any
24 hours (subdomain names, verification messages)."""

from __future__ import annotations

from collections.abc import Sequence

from maskmail.core.errors import RateLimited

DAY = 86_400


def check_day(recent: Sequence[int], limit: int, now: int, what: str) -> None:
    """RateLimited, saying ``what`` and when one may try again, when ``limit`` of the
    ``recent`` times (oldest first) fall in the day before ``now``; 0 is no limit."""
    inside = [t for t in recent if t > now - DAY]
    if limit and len(inside) >= limit:
        wait = max(1, inside[-limit] + DAY - now)
        raise RateLimited(f"{what}, the limit; try again in {in_words(wait)}", wait)


def in_words(seconds: int) -> str:
    """A wait as a person reads it, rounded up: "a minute", "40 minutes", "24 hours"."""
    minutes = -(-seconds // 60)
    if minutes < 60:
        return "a minute" if minutes <= 1 else f"{minutes} minutes"
    hours = -(-seconds // 3600)
    return "an hour" if hours <= 1 else f"{hours} hours"
