"""Where the CPU went during one scale-out measurement, and the table that says so.

Every part (maskmail's processes, PostgreSQL's backends for the run's database, PgBouncer,
the load generator, the sink) is read from /proc as CPU seconds per process before and
after the measurement; a process that appeared in between counts from its start. Shares
are of the whole machine (all cores = 100 %) over the same window as "machine busy", so
"rest" is what no part accounts for: PostgreSQL's own background processes, the kernel's
share not charged to a process, and other work on the machine.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from statistics import median

import asyncpg
from sqlalchemy.engine import make_url
from tests.pgbouncer import running_pgbouncer

from bench import procs
from bench.lab import Database

CORES = os.cpu_count() or 1
VIAS = ("direct", "uncached", "pgbouncer")
Reading = Callable[[], dict[int, float]]  # process id -> CPU seconds so far


def busy_and_total() -> tuple[float, float]:
    """Seconds of CPU the whole machine spent busy, and in all, since boot."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:8]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields) - idle) / procs.TICKS, sum(fields) / procs.TICKS


def backend_pids(db: Database) -> list[int]:
    """The PostgreSQL server processes connected to this run's database."""

    async def ask() -> list[int]:
        conn = await asyncpg.connect(db.plain_url)
        try:
            rows = await conn.fetch(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"
            )
        finally:
            await conn.close()
        return [int(row["pid"]) for row in rows]

    return asyncio.run(ask())


def postgres_reading(db: Database) -> Reading:
    return lambda: procs.cpu_by_pid(backend_pids(db))


def tree_reading(roots: list[int]) -> Reading:
    """These processes and their descendants, as they are at each reading."""
    return lambda: procs.cpu_by_pid(roots)


def waited_children() -> dict[int, float]:
    """CPU of the children this process already waited for (each wrk or load run)."""
    times = os.times()
    return {0: times.children_user + times.children_system}


@dataclass(frozen=True)
class Pool:
    """The database URL the servers use, and PgBouncer's CPU (none when direct)."""

    url: str
    pgbouncer: Reading | None


@contextmanager
def pool(db: Database, work: Path, via: str) -> Iterator[Pool]:
    """Straight to PostgreSQL ("direct"), straight but with the URL switch PgBouncer needs
    ("uncached": no prepared statements kept), or through a private PgBouncer in
    transaction pooling mode with that switch ("pgbouncer", tests/pgbouncer.py's), as
    docs/operations.md prescribes."""
    if via != "pgbouncer":
        url = make_url(db.url)
        if via == "uncached":
            url = url.update_query_dict({"prepared_statement_cache_size": "0"})
        yield Pool(url.render_as_string(hide_password=False), None)
        return
    with running_pgbouncer(db.url, work) as pooled:
        ours = [pid for pid in procs.tree([os.getpid()]) if procs.command_name(pid) == "pgbouncer"]
        yield Pool(pooled, lambda: procs.cpu_by_pid(ours))


def parts_for(parts: list[str], via: str) -> list[str]:
    """The table's CPU columns: PgBouncer's only when there is one."""
    return [part for part in parts if via == "pgbouncer" or part != "pgbouncer"]


@dataclass(frozen=True)
class Sample:
    """One measurement: its rate and latency, and where the CPU went meanwhile."""

    rate: float  # requests or messages per second
    p50_ms: float
    p99_ms: float
    errors: int
    machine_busy: float
    shares: dict[str, float]  # part -> share of all cores
    cpu: dict[str, float]  # part -> CPU seconds
    units: float  # requests answered or messages delivered


class Window:
    """Opened before a measurement and closed after it."""

    def __init__(self, parts: dict[str, Reading]) -> None:
        self.parts = parts
        self.before = {name: read() for name, read in parts.items()}
        self.busy, self.total = busy_and_total()

    def close(self) -> tuple[float, dict[str, float], dict[str, float]]:
        """The machine's busy share over the window, and each part's share and seconds."""
        busy, total = busy_and_total()
        span = max(total - self.total, 1e-9)
        cpu = {}
        for name, read in self.parts.items():
            before, after = self.before[name], read()
            seconds = sum(now - before.get(pid, 0.0) for pid, now in after.items())
            cpu[name] = max(seconds, 0.0)
        shares = {name: seconds / span for name, seconds in cpu.items()}
        return (busy - self.busy) / span, shares, cpu


def said(sample: Sample) -> str:
    """One measurement on one line, for the progress log."""
    shares = ", ".join(f"{part} {share:.0%}" for part, share in sample.shares.items())
    return (
        f"{sample.rate:,.0f}/s, p99 {sample.p99_ms:.0f} ms, {sample.errors} errors, "
        f"machine busy {sample.machine_busy:.0%}, {shares}"
    )


def ms_per_unit(part: str, sample: Sample) -> float:
    """A part's CPU milliseconds per request answered or message delivered."""
    return sample.cpu.get(part, 0.0) * 1000 / sample.units if sample.units else 0.0


def table(
    first: str, unit: str, parts: list[str], results: dict[tuple[str, int], list[Sample]]
) -> list[str]:
    """Markdown rows, medians over the rounds; "x 1 process" is the median of the same
    round's ratios to the fewest processes."""
    head = [first, "processes", f"{unit}/s", "x 1 process", "p50 ms", "p99 ms", "errors"]
    head += ["machine busy", *parts, "rest"]
    head += [f"maskmail CPU ms/{unit}", f"PostgreSQL CPU ms/{unit}"]
    rows = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for (label, n), samples in results.items():
        one = results[(label, min(k for e, k in results if e == label))]
        ratios = [s.rate / b.rate for s, b in zip(samples, one, strict=False) if b.rate]
        busy = median(s.machine_busy for s in samples)
        shares = {part: median(s.shares.get(part, 0.0) for s in samples) for part in parts}
        cells = [label, str(n), f"{median(s.rate for s in samples):,.0f}"]
        cells += [f"{median(ratios):.2f}" if ratios else "-"]
        cells += [f"{median(s.p50_ms for s in samples):.0f}"]
        cells += [f"{median(s.p99_ms for s in samples):.0f}"]
        cells += [str(sum(s.errors for s in samples)), f"{busy:.0%}"]
        cells += [f"{shares[part]:.0%}" for part in parts]
        cells += [f"{max(busy - sum(shares.values()), 0):.0%}"]
        for part in ("maskmail", "PostgreSQL"):
            cells += [f"{median(ms_per_unit(part, s) for s in samples):.2f}"]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def relation_sizes(db: Database) -> list[str]:
    """Markdown rows: each table of the run's database, its rows, and its size with its
    indexes and TOAST (pg_total_relation_size)."""

    async def ask() -> list[tuple[str, int, int]]:
        conn = await asyncpg.connect(db.plain_url)
        try:
            names = await conn.fetch(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY c.relname"
            )
            found = []
            for row in names:
                name = row["relname"]
                count = await conn.fetchval(f'SELECT count(*) FROM "{name}"')
                size = await conn.fetchval("SELECT pg_total_relation_size($1::regclass)", name)
                found.append((name, int(count), int(size)))
            return found
        finally:
            await conn.close()

    rows = ["| table | rows | total bytes | bytes/row |", "|---|---:|---:|---:|"]
    for name, count, size in asyncio.run(ask()):
        per_row = f"{size / count:,.0f}" if count else "-"
        rows.append(f"| {name} | {count:,} | {size:,} | {per_row} |")
    return rows
