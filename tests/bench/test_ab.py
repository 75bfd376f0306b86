"""bench.ab serves two checkouts and compares them; against itself, the ratio is near 1."""

from __future__ import annotations

import re

import pytest
from bench.lab import ROOT

from bench import ab


@pytest.mark.slow
def test_a_checkout_against_itself_is_about_even(capsys: pytest.CaptureFixture[str]) -> None:
    assert ab.main([str(ROOT), "sqlite", "page", "--rounds", "1"]) == 0
    found = re.fullmatch(
        r"sqlite page: this / other = ([\d.]+) \(median of 1\)\n", capsys.readouterr().out
    )
    assert found is not None
    # wrk counts non-2xx answers as errors, not throughput: a server refusing every
    # request would show here as 0 or as a ratio far from 1.
    assert 0.5 < float(found.group(1)) < 2
