"""Scale: maskmail with 1,000,000 addresses over 10,000 users plus one user with 100,000.

Optional (``--scale``): loading takes about a minute per backend on the 2-core machine.
The page and POST of a user with 100 addresses are measured against a small database
served beside the big one, alternated round by round (A B A B), so that the ratio is
not the machine's drift between two runs.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
import urllib.request
from contextlib import closing
from pathlib import Path
from statistics import median

import asyncpg
from tests.support import free_port

from bench import seed
from bench.api import BASE, Key, Log, Plan, server_command
from bench.lab import VENV_BIN, Database, Server, database, rss_kib, run, system_env
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


def _settle(db: Database) -> None:
    """After a bulk load, what a database in service has: statistics and, on PostgreSQL,
    a vacuumed table. Otherwise autovacuum's pass over a million new rows runs during
    the measurements (it did, and cost POST 28 %), on the big database only."""
    if db.backend == "sqlite":
        with closing(sqlite3.connect(db.plain_url.removeprefix("sqlite:///"))) as conn:
            conn.execute("ANALYZE")
        return

    async def vacuum() -> None:
        conn = await asyncpg.connect(db.plain_url)
        try:
            await conn.execute("VACUUM ANALYZE")
        finally:
            await conn.close()

    asyncio.run(vacuum())


def _start(db: Database, work: Path, label: str, key: str) -> Server:
    env = system_env(db)
    port = free_port()
    server = Server(label, server_command("maskmail", port, 1, None), env, port, work / label)
    server.wait_ready(f"{BASE}?paging=1", key)
    return server


def run_scale(plan: Plan, small: dict[Key, list[Figures]], say: Log) -> tuple[str, list[str]]:
    """``small`` is unused since the small database runs beside the big one (kept for the
    caller's signature)."""
    rows = [
        "| backend | measurement | req/s | p50 ms | p99 ms | against the small database |",
        "|---|---|---:|---:|---:|---:|",
    ]
    last = BIG // PAGE
    for backend in plan.backends:
        with (
            database(backend, plan.work, "scale") as db,
            database(backend, plan.work, "scale-small") as small_db,
        ):
            for each in (db, small_db):
                run([str(VENV_BIN / "maskmail"), "db", "upgrade"], system_env(each))
            small_keys = seed.load_maskmail(small_db, [PER_USER, PER_USER])
            started = time.monotonic()
            keys = seed.load_maskmail(db, [PER_USER] * USERS + [BIG], progress=True)
            loaded = time.monotonic() - started
            say(f"[{backend}] loaded {USERS * PER_USER + BIG:,} addresses in {loaded:.0f} s")
            for each in (db, small_db):
                _settle(each)
            server = _start(db, plan.work, f"scale-{backend}.log", keys[0])
            beside = _start(small_db, plan.work, f"small-{backend}.log", small_keys[0])
            try:
                url = f"http://127.0.0.1:{server.port}{BASE}"
                small_url = f"http://127.0.0.1:{beside.port}{BASE}"
                page = f"?paging=1&size={PAGE}"
                # (label, big url, its key, method, small url and key to alternate with)
                cases: list[tuple[str, str, str, str, tuple[str, str] | None]] = [
                    ("page 1, user with 100", url + page, keys[0], "GET",
                     (small_url + page, small_keys[0])),
                    ("POST, user with 100", url, keys[1], "POST", (small_url, small_keys[1])),
                    (f"page 1, user with {BIG:,}", url + page, keys[-1], "GET", None),
                    (f"last page ({last:,}), user with {BIG:,}", f"{url}{page}&page={last}",
                     keys[-1], "GET", None),
                ]  # fmt: skip
                for label, target, key, method, versus_small in cases:
                    figs, ratios = [], []
                    for _ in range(plan.reps):
                        fig = wrk(plan.load, target, key, method)
                        figs.append(fig)
                        if versus_small:
                            other = wrk(plan.load, versus_small[0], versus_small[1], method)
                            if other.rps > 0:
                                ratios.append(fig.rps / other.rps)
                    rps = median(f.rps for f in figs)
                    versus = f"{median(ratios):.2f}" if ratios else "-"
                    say(f"[{backend} scale] {label}: {rps:,.0f} req/s (x small {versus})")
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
                beside.stop()
            rows_note = f"loaded in {loaded:.0f} s"
            rows.append(
                f"| {backend} | bulk load of {USERS * PER_USER + BIG:,} rows | - | - | - "
                f"| {rows_note} |"
            )
    return "Scale: 1,000,000 addresses over 10,000 users, plus one user with 100,000", rows
