"""Timestamps are integer Unix seconds, UTC, taken in Python so both backends agree."""

from __future__ import annotations

import time


def now() -> int:
    return int(time.time())


DAY = 86_400


def today() -> int:
    """The UTC day, as days since the epoch: the key of the daily counts."""
    return now() // DAY
