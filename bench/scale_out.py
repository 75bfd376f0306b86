"""Scale-out on one PostgreSQL: the API and the mail plane with 1, 2, ... worker processes.

``python -m bench.scale_out`` seeds one PostgreSQL database per plane and runs the servers
for every count side by side on it, straight or through a private PgBouncer
(``--via pgbouncer``). The API (``--families api``): ``maskmail serve --workers N`` with
Redis, page GET and POST measured with wrk. The mail plane (``--families mail``,
bench/scale_out_mail.py): ``maskmail smtp --workers N`` relaying bench.mail_load's
messages to bench.mail_sink. Measurements go in rounds (N = 1, 2, 4, 1, 2, 4, ...) so
drift on a shared machine hits all counts alike, and where the CPU went during each
(bench/scale_out_cpu.py) says what limits the rate.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support import free_port

from bench import seed
from bench.api import ACCOUNTS, ENDPOINTS, Endpoint, server_command, stderr
from bench.lab import VENV_BIN, Server, database, run, system_env
from bench.measure import Load, wrk
from bench.report import machine
from bench.scale_out_cpu import (
    CORES,
    VIAS,
    Reading,
    Sample,
    Window,
    parts_for,
    pool,
    postgres_reading,
    said,
    table,
    tree_reading,
    waited_children,
)
from bench.scale_out_mail import MailRun, run_mail_scale_out

REDIS = "redis://127.0.0.1:6379/0"
API_PARTS = ["maskmail", "PostgreSQL", "pgbouncer", "wrk"]


def measure(
    server: Server, readings: dict[str, Reading], load: Load, endpoint: Endpoint, key: str
) -> Sample:
    window = Window(readings)
    figures = wrk(load, f"http://127.0.0.1:{server.port}{endpoint.path}", key, endpoint.method)
    busy, shares, cpu = window.close()
    answered = figures.rps * load.duration
    return Sample(
        figures.rps, figures.p50_ms, figures.p99_ms, figures.errors, busy, shares, cpu, answered
    )


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


def run_scale_out(counts: list[int], load: Load, reps: int, work: Path, via: str) -> list[str]:
    with database("postgres", work, "scale-out") as db, pool(db, work, via) as pooled:
        env = {**system_env(db), "MASKMAIL_REDIS_URL": REDIS}
        run([str(VENV_BIN / "maskmail"), "db", "upgrade"], env)
        keys = seed.load_maskmail(db, ACCOUNTS)
        env["MASKMAIL_DATABASE_URL"] = pooled.url
        results: dict[tuple[str, int], list[Sample]] = {}
        endpoints = [e for e in ENDPOINTS if e.name in ("page", "post")]
        with servers(counts, env, work, keys[0]) as running:
            warm = Load(duration=1, connections=load.connections)
            for server in running.values():
                wrk(warm, f"http://127.0.0.1:{server.port}{ENDPOINTS[0].path}", keys[0])
            for endpoint in endpoints:
                for rep in range(reps):
                    for n, server in running.items():
                        readings = {
                            "maskmail": tree_reading([server.proc.pid]),
                            "PostgreSQL": postgres_reading(db),
                            "wrk": waited_children,
                        }
                        if pooled.pgbouncer is not None:
                            readings["pgbouncer"] = pooled.pgbouncer
                        sample = measure(server, readings, load, endpoint, keys[endpoint.account])
                        results.setdefault((endpoint.name, n), []).append(sample)
                        stderr(
                            f"[scale-out] {endpoint.name} {n} processes #{rep + 1}: {said(sample)}"
                        )
    return table("endpoint", "req", parts_for(API_PARTS, via), results)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.scale_out", description=__doc__)
    p.add_argument("--families", default="api", help="which planes: api,mail")
    p.add_argument(
        "--via",
        choices=VIAS,
        default="direct",
        help="to PostgreSQL directly, directly without kept prepared statements "
        "(the URL switch PgBouncer needs), or through a private PgBouncer",
    )
    p.add_argument(
        "--pgbouncer", dest="via", action="store_const", const="pgbouncer", help="--via pgbouncer"
    )
    p.add_argument("--processes", default="1,2,4", help="worker counts, e.g. 1,2,4")
    p.add_argument("--duration", type=float, default=5, help="API: seconds per measurement")
    p.add_argument("--reps", type=int, default=3, help="rounds of every count")
    p.add_argument("--connections", type=int, default=50, help="API: wrk's connections")
    p.add_argument("--messages", type=int, default=4000, help="mail: messages per measurement")
    p.add_argument("--mail-connections", type=int, default=32, help="mail: SMTP connections")
    p.add_argument("--size", type=int, default=10_240, help="mail: bytes per message")
    args = p.parse_args(argv)
    counts = [int(n) for n in args.processes.split(",")]
    families = [f for f in args.families.split(",") if f]
    if unknown := set(families) - {"api", "mail"}:
        p.error(f"unknown families: {', '.join(sorted(unknown))}")
    print(f"{machine()}; {CORES} cores seen; PostgreSQL {args.via}")
    with tempfile.TemporaryDirectory(prefix="maskmail-scale-out-") as tmp:
        for family in families:
            print(f"\n{family}: load average before {load_average()}\n")
            if family == "api":
                load = Load(duration=args.duration, connections=args.connections)
                rows = run_scale_out(counts, load, args.reps, Path(tmp), args.via)
            else:
                plan = MailRun(counts, args.messages, args.mail_connections, args.size, args.reps)
                rows = run_mail_scale_out(plan, Path(tmp), args.via)
            print("\n".join(rows), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
