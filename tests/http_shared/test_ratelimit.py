"""The in-process sliding window counter counts as the library's does."""

from __future__ import annotations

import pytest
from limits import parse
from limits.storage import MemoryStorage
from limits.strategies import SlidingWindowCounterRateLimiter

from maskmail.http_shared import ratelimit
from maskmail.http_shared.ratelimit import LocalWindows

START = 6_000.0  # the start of a window of 60 seconds


def test_a_full_window_refuses_until_the_previous_one_weighs_less() -> None:
    windows = LocalWindows(3, 60)
    assert [windows.hit("k", START + n) for n in range(3)] == [0, 0, 0]
    assert 1 <= windows.hit("k", START + 10) <= 60
    assert windows.hit("other", START + 10) == 0
    # Half into the next window the three weigh 1.5, counted as 1: two more fit.
    assert [windows.hit("k", START + 90) for _ in range(2)] == [0, 0]
    assert windows.hit("k", START + 90) > 0
    # Two windows later nothing counts.
    assert [windows.hit("k", START + 180) for _ in range(3)] == [0, 0, 0]


def test_the_same_hits_are_refused_as_by_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    item = parse("5/minute")
    library = SlidingWindowCounterRateLimiter(MemoryStorage())
    windows = LocalWindows(item.amount, item.get_expiry())
    moments = [START + t for t in (0, 1, 2, 3, 4, 5, 30, 61, 62, 63, 75, 90, 100, 119, 200)]
    ours, theirs = [], []
    for moment in moments:
        monkeypatch.setattr("time.time", lambda moment=moment: moment)
        theirs.append(library.hit(item, "k"))
        ours.append(windows.hit("k", moment) == 0)
    assert ours == theirs
    assert False in ours and ours.count(True) > 5


def test_names_of_finished_windows_are_forgotten_past_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ratelimit, "SWEEP_AT", 4)
    windows = LocalWindows(1, 60)
    for n in range(4):
        windows.hit(f"old{n}", START)
    windows.hit("new", START + 200)
    assert set(windows.counts) == {"new"}
