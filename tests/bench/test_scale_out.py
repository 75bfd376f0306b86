"""bench/scale_out.py: the table's same-round ratio, shares and CPU per unit, and a tiny
run of both planes through PgBouncer."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from bench import scale_out_cpu
from tests.bench.runner import ROOT


def sample(rate: float, maskmail: float, postgres: float) -> scale_out_cpu.Sample:
    """Five seconds of ``rate`` units; shares of the whole machine."""
    seconds = 5 * scale_out_cpu.CORES
    shares = {"maskmail": maskmail, "PostgreSQL": postgres, "wrk": 0.05}
    cpu = {part: share * seconds for part, share in shares.items()}
    return scale_out_cpu.Sample(rate, 1.0, 9.0, 0, 1.0, shares, cpu, rate * 5)


def test_table_rows_give_ratio_shares_and_cpu_per_unit() -> None:
    results = {
        ("page", 1): [sample(1000, 0.5, 0.1), sample(800, 0.5, 0.1)],
        ("page", 2): [sample(1500, 0.8, 0.15), sample(1600, 0.8, 0.15)],
    }
    header, _, one, two = scale_out_cpu.table(
        "endpoint", "req", ["maskmail", "PostgreSQL", "wrk"], results
    )
    assert header.count("|") == one.count("|") == two.count("|")
    assert "maskmail CPU ms/req" in header
    cells = [c.strip() for c in two.strip("|").split("|")]
    assert cells[:4] == ["page", "2", "1,550", "1.75"]  # ratios 1.5 and 2.0, median 1.75
    assert cells[7:12] == ["100%", "80%", "15%", "5%", "0%"]
    cores = scale_out_cpu.CORES
    # Median over the rounds of each round's CPU over what it served.
    assert cells[12] == f"{0.8 * cores * 1000 / 1550:.2f}"
    assert cells[13] == f"{0.15 * cores * 1000 / 1550:.2f}"


def _rows(out: str, first: str) -> list[list[str]]:
    found = re.findall(rf"^\| {first} \| (\d+) \|(.*)\|$", out, re.M)
    return [[n, *(c.strip() for c in rest.split("|"))] for n, rest in found]


@pytest.mark.slow
def test_both_planes_through_pgbouncer_scale_without_errors() -> None:
    tiny = ["--processes", "1,2", "--reps", "1", "--duration", "1", "--connections", "4"]
    tiny += ["--messages", "40", "--mail-connections", "4"]
    done = subprocess.run(
        [sys.executable, "-m", "bench.scale_out", "--families", "api,mail", "--pgbouncer", *tiny],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "PostgreSQL pgbouncer" in done.stdout
    assert "| pgbouncer |" in done.stdout  # PgBouncer's CPU has its column
    api, mail = _rows(done.stdout, "(?:page|post)"), _rows(done.stdout, "smtp")
    assert [row[0] for row in api] == ["1", "2", "1", "2"]
    assert [row[0] for row in mail] == ["1", "2"]
    for row in api + mail:
        rate, errors = float(row[1].replace(",", "")), row[5]
        assert rate > 0 and errors == "0", row
        assert float(row[-2]) > 0 and float(row[-1]) > 0  # CPU ms per unit: maskmail, PostgreSQL
    # The database's relations, with the seeded users and addresses.
    assert re.search(r"^\| addresses \| 1,000 \| [\d,]+ \| [\d,]+ \|$", done.stdout, re.M)
    assert re.search(r"^\| users \| 100 \|", done.stdout, re.M)
