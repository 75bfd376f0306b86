"""Scale-out: API requests/s with 1, 2 and 4 worker processes on one PostgreSQL and Redis.

``python -m bench.scale_out`` serves one seeded PostgreSQL database with
``maskmail serve --workers N`` for each N side by side, and measures the page GET and the
POST in rounds (N = 1, 2, 4, 1, 2, 4, ...) so drift on a shared machine hits all alike.
Where the CPU went during each measurement (maskmail's processes, wrk, everything else:
PostgreSQL, Redis and other work on the machine) says what limits it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from statistics import median

import asyncpg
from tests.support import free_port

from bench import seed
from bench.api import ACCOUNTS, ENDPOINTS, Endpoint, server_command, stderr
from bench.lab import VENV_BIN, Database, Server, database, run, system_env
from bench.measure import Figures, Load, wrk
from bench.procs import TICKS, cpu_seconds
from bench.report import machine

REDIS = "redis://127.0.0.1:6379/0"
CORES = os.cpu_count() or 1


def busy_and_total() -> tuple[float, float]:
    """Seconds of CPU the whole machine spent busy, and in all, since boot."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:8]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields) - idle) / TICKS, sum(fields) / TICKS


@dataclass(frozen=True)
class Sample:
    figures: Figures
    machine_busy: float  # share of all cores busy during the measurement
    maskmail: float  # share of all cores used by maskmail's processes
    postgres: float  # ... by the PostgreSQL backends serving this database
    wrk: float  # ... by wrk


def backends(db: Database) -> list[int]:
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


def measure(server: Server, db: Database, load: Load, endpoint: Endpoint, key: str) -> Sample:
    roots = [server.proc.pid]
    pg = backends(db)  # the pools are full after the warm-up: the same backends throughout
    busy0, total0 = busy_and_total()
    mine0, pg0, self0 = cpu_seconds(roots), cpu_seconds(pg), _children_cpu()
    figures = wrk(load, f"http://127.0.0.1:{server.port}{endpoint.path}", key, endpoint.method)
    busy1, total1 = busy_and_total()
    mine1, pg1, self1 = cpu_seconds(roots), cpu_seconds(pg), _children_cpu()
    span = max(total1 - total0, 1e-9)
    return Sample(
        figures,
        (busy1 - busy0) / span,
        (mine1 - mine0) / span,
        (pg1 - pg0) / span,
        (self1 - self0) / span,
    )


def _children_cpu() -> float:
    """CPU of the children this process waited for (each wrk run)."""
    times = os.times()
    return times.children_user + times.children_system


@contextmanager
def servers(
    counts: list[int], env: dict[str, str], work: Path, key: str
) -> Iterator[dict[int, Server]]:
    started: dict[int, Server] = {}
    try:
        for n in counts:
            port = free_port()
            started[n] = Server(
                f"maskmail-{n}",
                server_command("maskmail", port, n, None),
                env,
                port,
                work / f"{n}.log",
            )
            started[n].wait_ready(ENDPOINTS[0].path, key, timeout=240)
        yield started
    finally:
        for server in started.values():
            server.stop()


def run_scale_out(counts: list[int], load: Load, reps: int, work: Path) -> list[str]:
    with database("postgres", work, "scale-out") as db:
        env = {**system_env(db), "MASKMAIL_REDIS_URL": REDIS}
        run([str(VENV_BIN / "maskmail"), "db", "upgrade"], env)
        keys = seed.load_maskmail(db, ACCOUNTS)
        results: dict[tuple[str, int], list[Sample]] = {}
        endpoints = [e for e in ENDPOINTS if e.name in ("page", "post")]
        with servers(counts, env, work, keys[0]) as running:
            warm = Load(duration=1, connections=load.connections)
            for server in running.values():
                wrk(warm, f"http://127.0.0.1:{server.port}{ENDPOINTS[0].path}", keys[0])
            for endpoint in endpoints:
                for rep in range(reps):
                    for n, server in running.items():
                        sample = measure(server, db, load, endpoint, keys[endpoint.account])
                        results.setdefault((endpoint.name, n), []).append(sample)
                        stderr(
                            f"[scale-out] {endpoint.name} {n} processes #{rep + 1}: "
                            f"{sample.figures.rps:,.0f} req/s, machine busy "
                            f"{sample.machine_busy:.0%}, maskmail {sample.maskmail:.0%}, "
                            f"PostgreSQL {sample.postgres:.0%}, wrk {sample.wrk:.0%}"
                        )
    return table(results)


def _ms_per_request(share: float, sample: Sample) -> float:
    """CPU milliseconds per request from a share of the whole machine."""
    return share * CORES * 1000 / sample.figures.rps if sample.figures.rps else 0.0


def table(results: dict[tuple[str, int], list[Sample]]) -> list[str]:
    """Markdown rows, medians over the rounds. CPU shares are of the whole machine (all
    cores = 100 %); "rest" is Redis, the kernel's share not charged to a process, and
    other work on the machine."""
    rows = [
        "| endpoint | processes | req/s | x 1 process | p99 ms | errors | machine busy"
        " | maskmail | PostgreSQL | wrk | rest | maskmail CPU ms/req | PostgreSQL CPU ms/req |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (endpoint, n), samples in results.items():
        one = results[(endpoint, min(k for e, k in results if e == endpoint))]
        ratios = [s.figures.rps / b.figures.rps for s, b in zip(samples, one, strict=False)]
        busy = median(s.machine_busy for s in samples)
        mine = median(s.maskmail for s in samples)
        pg = median(s.postgres for s in samples)
        load = median(s.wrk for s in samples)
        rows.append(
            f"| {endpoint} | {n} | {median(s.figures.rps for s in samples):,.0f} "
            f"| {median(ratios):.2f} | {median(s.figures.p99_ms for s in samples):.0f} "
            f"| {sum(s.figures.errors for s in samples)} | {busy:.0%} | {mine:.0%} | {pg:.0%} "
            f"| {load:.0%} | {max(busy - mine - pg - load, 0):.0%} "
            f"| {median(_ms_per_request(s.maskmail, s) for s in samples):.2f} "
            f"| {median(_ms_per_request(s.postgres, s) for s in samples):.2f} |"
        )
    return rows


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.scale_out", description=__doc__)
    p.add_argument("--processes", default="1,2,4", help="worker counts, e.g. 1,2,4")
    p.add_argument("--duration", type=float, default=5, help="seconds per measurement")
    p.add_argument("--reps", type=int, default=3, help="rounds of every count")
    p.add_argument("--connections", type=int, default=50)
    args = p.parse_args(argv)
    counts = [int(n) for n in args.processes.split(",")]
    load = Load(duration=args.duration, connections=args.connections)
    with tempfile.TemporaryDirectory(prefix="maskmail-scale-out-") as tmp:
        rows = run_scale_out(counts, load, args.reps, Path(tmp))
    print(f"{machine()}; {CORES} cores seen\n")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
