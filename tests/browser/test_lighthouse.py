"""Lighthouse scores every dashboard page 100 for accessibility and best practices, in the
light theme and the dark one (scripts/lighthouse.py, run as ``make lighthouse`` does).
Without npm, or with the npm registry out of reach, the script cannot install Lighthouse
and this test fails: it never skips."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "lighthouse.py"
# A few of the pages the script scores; each must be in its table in both themes.
SOME_PAGES = ("sign-in", "addresses", "address", "domains", "help", "error")


@pytest.mark.slow
def test_every_page_scores_100_in_both_themes() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=3600, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("page "))
    rows = [line.split() for line in lines[header + 1 :] if line.strip()]
    assert {(name, theme) for name in SOME_PAGES for theme in ("light", "dark")} <= {
        (row[0], row[1]) for row in rows
    }
    assert all(row[2:] == ["100", "100"] for row in rows), run.stdout
