"""Running bench/run from the tests, into a page that already has hand-written text."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KEPT = "Hand-written text that the run must keep."


def run_bench(out: Path, *args: str) -> str:
    """bench/run with these arguments, writing to ``out``; the page it wrote."""
    out.write_text(f"# Benchmarks\n\n{KEPT}\n")
    done = subprocess.run(
        [str(ROOT / "bench" / "run"), *args, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    page = out.read_text()
    assert KEPT in page
    return page
