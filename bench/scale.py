"""Scale: maskmail with 1,000,000 addresses over 10,000 users plus one user with 100,000.

Optional (``--scale``): loading takes about a minute per backend on the 2-core machine.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from statistics import median

from tests.support import free_port

from bench import seed
from bench.api import BASE, Key, Log, Plan, server_command
from bench.lab import VENV_BIN, Server, database, rss_kib, run, system_env
from bench.measure import Figures, wrk

USERS = 10_000
PER_USER = 100
BIG = 100_000
PAGE = 10


def _peak_growth(server: Server, url: str, key: str, times: int) -> tuple[float, float]:
    """Peak RSS growth (MB) of the server's processes while fetching ``url``, and seconds each."""
    pids = server.pids()
    base = rss_kib(pids)
    peak = base
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, rss_kib(pids))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    took = []
    try:
        for _ in range(times):
            request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
            started = time.monotonic()
            with urllib.request.urlopen(request, timeout=120) as answer:
                while answer.read(1 << 16):
                    pass
            took.append(time.monotonic() - started)
    finally:
        stop.set()
        sampler.join()
    return (peak - base) / 1024, median(took)


def run_scale(plan: Plan, small: dict[Key, list[Figures]], say: Log) -> tuple[str, list[str]]:
    rows = [
        "| backend | measurement | req/s | p50 ms | p99 ms | against the small database |",
        "|---|---|---:|---:|---:|---:|",
    ]
    last = BIG // PAGE
    for backend in plan.backends:
        with database(backend, plan.work, "scale") as db:
            env = system_env(db)
            run([str(VENV_BIN / "maskmail"), "db", "upgrade"], env)
            started = time.monotonic()
            keys = seed.load_maskmail(db, [PER_USER] * USERS + [BIG], progress=True)
            loaded = time.monotonic() - started
            say(f"[{backend}] loaded {USERS * PER_USER + BIG:,} addresses in {loaded:.0f} s")
            port = free_port()
            cmd = server_command("maskmail", port, 1, None)
            server = Server("maskmail", cmd, env, port, plan.work / f"scale-{backend}.log")
            try:
                server.wait_ready(f"{BASE}?paging=1", keys[0])
                url = f"http://127.0.0.1:{port}{BASE}"
                cases = [
                    (
                        "page",
                        "page 1, user with 100",
                        f"{url}?paging=1&size={PAGE}",
                        keys[0],
                        "GET",
                    ),
                    ("post", "POST, user with 100", url, keys[1], "POST"),
                    (
                        "",
                        f"page 1, user with {BIG:,}",
                        f"{url}?paging=1&size={PAGE}",
                        keys[-1],
                        "GET",
                    ),
                    (
                        "",
                        f"last page ({last:,}), user with {BIG:,}",
                        f"{url}?paging=1&size={PAGE}&page={last}",
                        keys[-1],
                        "GET",
                    ),
                ]
                for endpoint, label, target, key, method in cases:
                    figs = [wrk(plan.load, target, key, method) for _ in range(plan.reps)]
                    rps = median(f.rps for f in figs)
                    versus = "-"
                    before = small.get((backend, 1, endpoint, "maskmail")) if endpoint else None
                    if before:
                        versus = f"{rps / median(f.rps for f in before):.2f}"
                    say(f"[{backend} scale] {label}: {rps:,.0f} req/s")
                    rows.append(
                        f"| {backend} | {label} | {rps:,.0f} "
                        f"| {median(f.p50_ms for f in figs):.2f} "
                        f"| {median(f.p99_ms for f in figs):.2f} | {versus} |"
                    )
                growth, took = _peak_growth(server, url, keys[-1], 3)
                say(f"[{backend} scale] full {BIG:,} array: {took:.2f} s, +{growth:.0f} MB RSS")
                rows.append(
                    f"| {backend} | full array of {BIG:,}, one request at a time "
                    f"| {1 / took:.2f} | {took * 1000:,.0f} | - "
                    f"| peak RSS growth {growth:.0f} MB |"
                )
            finally:
                server.stop()
            rows_note = f"loaded in {loaded:.0f} s"
            rows.append(
                f"| {backend} | bulk load of {USERS * PER_USER + BIG:,} rows | - | - | - "
                f"| {rows_note} |"
            )
    return "Scale: 1,000,000 addresses over 10,000 users, plus one user with 100,000", rows
