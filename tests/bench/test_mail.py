"""The mail benchmark in smoke mode: maskmail and a private Postfix relay a few messages
to the sink and the report gets its table (no timing is asserted)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.bench.runner import run_bench


@pytest.mark.slow
def test_bench_run_mail_smoke_relays_every_message_through_both_systems(tmp_path: Path) -> None:
    page = run_bench(tmp_path / "benchmarks.md", "--smoke", "--families", "mail")
    assert "### Mail: maskmail against Postfix" in page
    for system in ("maskmail", "postfix"):
        row = re.search(rf"^\| sqlite \| {system} \| ([\d,]+) \|(.*)\|$", page, re.M)
        assert row, f"no row for {system}"
        assert int(row.group(1).replace(",", "")) > 0
        cells = [c.strip() for c in row.group(2).split("|")]
        cpu_ms, harness_ms, pss_mb, rss_mb, processes, errors = cells[2:8]
        assert float(cpu_ms) > 0 and float(pss_mb) > 0 and float(rss_mb) > 0
        # The load and the sink are Python processes: they cannot relay for free.
        assert float(harness_ms) > 0
        # Postfix is a tree of daemons; the CPU and memory figures must cover all of them.
        assert int(processes) > (5 if system == "postfix" else 0)
        # Every message arrived, at its owner's mailbox.
        assert errors == "0", row.group(0)
    assert re.search(r"^- sqlite: maskmail/Postfix end to end \d+\.\d\d", page, re.M)
