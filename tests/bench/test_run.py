"""bench/run in its smoke mode, so the harness cannot rot unnoticed (no timing is asserted)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.bench.runner import run_bench


@pytest.mark.slow
def test_bench_run_smoke_measures_maskmail_and_the_ceiling(tmp_path: Path) -> None:
    page = run_bench(tmp_path / "benchmarks.md", "--smoke", "--families", "api")
    assert "Machine: " in page and "cores" in page
    for endpoint in ("page", "post", "full"):
        for system in ("maskmail", "ceiling"):
            row = re.search(rf"\| sqlite \| 1 \| {endpoint} \| {system} \| ([\d,]+) \|.*", page)
            assert row, f"no row for {endpoint} {system}"
            assert int(row.group(1).replace(",", "")) > 0
            errors = row.group(0).split("|")[8].strip()
            assert errors == "0", row.group(0)
