"""Timestamps are integer Unix seconds, UTC, taken in Python so both backends agree."""

from __future__ import annotations

import time


def now() -> int:
    return int(time.time())
