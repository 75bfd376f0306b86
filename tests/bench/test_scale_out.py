"""bench/scale_out.py's table: the same-round ratio to one process, and CPU per request."""

from __future__ import annotations

from bench.measure import Figures

from bench import scale_out


def sample(rps: float, maskmail: float, postgres: float) -> scale_out.Sample:
    return scale_out.Sample(Figures(rps, 1.0, 9.0, 0), 1.0, maskmail, postgres, 0.05)


def test_table_rows_give_ratio_shares_and_cpu_per_request() -> None:
    results = {
        ("page", 1): [sample(1000, 0.5, 0.1), sample(800, 0.5, 0.1)],
        ("page", 2): [sample(1500, 0.8, 0.15), sample(1600, 0.8, 0.15)],
    }
    header, _, one, two = scale_out.table(results)
    assert header.count("|") == one.count("|") == two.count("|")
    cells = [c.strip() for c in two.strip("|").split("|")]
    assert cells[:4] == ["page", "2", "1,550", "1.75"]  # ratios 1.5 and 2.0, median 1.75
    assert cells[7:11] == ["80%", "15%", "5%", "0%"]
    cores = scale_out.CORES
    assert cells[11] == f"{0.8 * cores * 1000 / 1550:.2f}"
    assert cells[12] == f"{0.15 * cores * 1000 / 1550:.2f}"
