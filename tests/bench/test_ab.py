"""bench.ab serves two checkouts and compares them; against itself, the ratio is near 1."""

from __future__ import annotations

import re

import pytest
from bench.lab import ROOT

from bench import ab


@pytest.mark.slow
def test_a_checkout_against_itself_is_about_even(capsys: pytest.CaptureFixture[str]) -> None:
    assert ab.main([str(ROOT), "sqlite", "page", "--rounds", "1", "--seconds", "2"]) == 0
    latency = r"latency p50 ([\d.]+) ms, p99 ([\d.]+) ms \(medians of the rounds\)\n"
    found = re.fullmatch(
        r"sqlite page: this / other = ([\d.]+) \(median of 1\)\n"
        rf"  this: {latency}  other: {latency}",
        capsys.readouterr().out,
    )
    assert found is not None
    p50, p99 = float(found.group(2)), float(found.group(3))
    assert 0 < p50 <= p99
    # wrk counts non-2xx answers as errors, not throughput: a server refusing every
    # request would show here as 0 or as a ratio far from 1.
    assert 0.5 < float(found.group(1)) < 2
