"""bench/run in its smoke mode, so the harness cannot rot unnoticed (no timing is asserted)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_run_smoke_measures_maskmail_and_the_ceiling(tmp_path: Path) -> None:
    out = tmp_path / "benchmarks.md"
    out.write_text("# Benchmarks\n\nHand-written text that the run must keep.\n")
    done = subprocess.run(
        [str(ROOT / "bench" / "run"), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    page = out.read_text()
    assert "Hand-written text that the run must keep." in page
    assert "Machine: " in page and "cores" in page
    for endpoint in ("page", "post", "full"):
        for system in ("maskmail", "ceiling"):
            row = re.search(rf"\| sqlite \| 1 \| {endpoint} \| {system} \| ([\d,]+) \|.*", page)
            assert row, f"no row for {endpoint} {system}"
            assert int(row.group(1).replace(",", "")) > 0
            errors = row.group(0).split("|")[8].strip()
            assert errors == "0", row.group(0)
