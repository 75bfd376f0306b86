"""What one hot statement costs the database and the client, per execution.

    .venv/bin/python -m bench.statement_cost [--runs 300] [--others 40000]

Seeds the API benchmark's accounts (``bench.api.ACCOUNTS``) in a fresh PostgreSQL database
and a fresh SQLite file, then prints, alternating the variants round by round:

- the full listing of 1,000 addresses built five ways on PostgreSQL: backend CPU (from
  ``/proc/<backend pid>/stat``, so the server must run on this host) and client CPU
  (``process_time``) per execution (docs/benchmarks.md, round 3, item 22);
- the page statement, and the same counting the owner's rows for its total (round 2's
  way), each under ``plan_cache_mode`` auto and force_generic_plan (items 19 and 20);
- the page statement on SQLite, wall time per execution (it runs in this process).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from itertools import product
from pathlib import Path

import asyncpg
import orjson

from bench import seed
from bench.api import ACCOUNTS
from bench.lab import VENV_BIN, Database, database, run, system_env
from maskmail.core.keys import hash_key
from maskmail.core.records import PRIVATE_EMAIL_FIELDS
from maskmail.store import listing

FULL_OWNER = ACCOUNTS.index(1000) + 1  # seeded users are numbered from 1
ROUNDS = 3
_COLUMNS = ", ".join(
    [*(f"a.{name}" for name in listing.STORED_FIELDS), f"{listing.FULL_ADDRESS} AS full_address"]
)
_ROWS = "FROM addresses a WHERE a.user_id = $1 ORDER BY a.id"
# The ways tried to build the full listing's JSON; "concat" is the statement in use.
JSON_WAYS = {
    "row_to_json": f"SELECT string_agg(row_to_json(w)::text, ',' ORDER BY w.id) "
    f"FROM (SELECT {_COLUMNS} {_ROWS}) w",
    "json_build_object": "SELECT string_agg(json_build_object("
    + ", ".join(f"'{name}', a.{name}" for name in listing.STORED_FIELDS)
    + f", 'full_address', {listing.FULL_ADDRESS})::text, ',') {_ROWS.replace('ORDER BY a.id', '')}",
    "json_agg": f"SELECT json_agg(w)::text FROM (SELECT {_COLUMNS} {_ROWS}) w",
    "concat (in use)": listing.CHUNK.postgresql,
    "plain columns + orjson": f"SELECT {_COLUMNS} {_ROWS}",
}
_KEYS = PRIVATE_EMAIL_FIELDS
# The page in use, and the same statement counting the owner's rows for its total, as
# round 2's did before the count was kept per owner (items 19 and 20).
PAGES = {
    "page": listing.PAGE.postgresql,
    "page counting rows": listing.PAGE.postgresql.replace(
        "o.total",
        "(SELECT count(*) FROM addresses WHERE user_id = (SELECT user_id FROM o))",
    ),
}


def _bytes(text: str | bytes) -> bytes:
    return text if isinstance(text, bytes) else text.encode()


def _backend_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _per_run(
    conn: asyncpg.Connection, call: Callable[[], Awaitable[object]], runs: int
) -> tuple[float, float]:
    """Backend and client CPU in ms per execution."""
    pid = conn.get_server_pid()
    for _ in range(20):
        await call()
    backend, client = _backend_cpu(pid), time.process_time()
    for _ in range(runs):
        await call()
    return (
        (_backend_cpu(pid) - backend) / runs * 1e3,
        (time.process_time() - client) / runs * 1e3,
    )


async def _postgres(db: Database, page_key: str, runs: int) -> list[str]:
    url = db.plain_url
    conn = await asyncpg.connect(url, server_settings={"plan_cache_mode": "force_generic_plan"})
    lines = ["PostgreSQL, full listing of 1,000 (backend / client CPU ms per execution):"]
    try:

        def way(name: str, sql: str) -> Callable[[], Awaitable[bytes | str]]:
            args = (FULL_OWNER, 0, 2000) if name.startswith("concat") else (FULL_OWNER,)

            async def call() -> bytes | str:
                rows = await conn.fetch(sql, *args)
                if name.startswith("plain"):
                    return orjson.dumps([dict(zip(_KEYS, row, strict=True)) for row in rows])
                text: bytes | str = rows[0][0]
                return text if name == "json_agg" else b"[%b]" % _bytes(text)

            return call

        # Every way must write the same addresses, or comparing them means nothing.
        written = {name: orjson.loads(await way(name, sql)()) for name, sql in JSON_WAYS.items()}
        if any(value != written["row_to_json"] for value in written.values()):
            raise RuntimeError("the ways of writing the listing disagree")
        if len(written["row_to_json"]) != 1000:
            raise RuntimeError("the full owner does not have 1,000 addresses")
        found: dict[str, list[tuple[float, float]]] = {name: [] for name in JSON_WAYS}
        for _ in range(ROUNDS):
            for name, sql in JSON_WAYS.items():
                found[name].append(await _per_run(conn, way(name, sql), runs))
        lines += [_line(name, costs) for name, costs in found.items()]
    finally:
        await conn.close()
    lines.append("PostgreSQL, page statement (backend / client CPU ms per execution):")
    modes = {
        mode: await asyncpg.connect(url, server_settings={"plan_cache_mode": mode})
        for mode in ("auto", "force_generic_plan")
    }
    try:
        pages: dict[str, list[tuple[float, float]]] = {}
        for _ in range(ROUNDS):
            for (statement, sql), (mode, mode_conn) in product(PAGES.items(), modes.items()):

                async def page(c: asyncpg.Connection = mode_conn, text: str = sql) -> object:
                    return await c.fetch(text, hash_key(page_key), 10, 0)

                costs = await _per_run(mode_conn, page, runs * 5)
                pages.setdefault(f"{statement}, {mode}", []).append(costs)
        lines += [_line(name, costs) for name, costs in pages.items()]
    finally:
        for mode_conn in modes.values():
            await mode_conn.close()
    return lines


def _line(name: str, costs: list[tuple[float, float]]) -> str:
    backend = sorted(c[0] for c in costs)[len(costs) // 2]
    client = sorted(c[1] for c in costs)[len(costs) // 2]
    return f"  {name:38} {backend:6.3f} / {client:6.3f}"


def _sqlite(db: Database, page_key: str, runs: int) -> list[str]:
    conn = sqlite3.connect(db.url.split("///", 1)[1], isolation_level=None)
    try:
        args = (hash_key(page_key), 10, 0)
        times = []
        for _ in range(ROUNDS):
            started = time.perf_counter()
            for _ in range(runs * 10):
                conn.execute(listing.PAGE.sqlite, args).fetchall()
            times.append((time.perf_counter() - started) / (runs * 10) * 1e6)
    finally:
        conn.close()
    return [f"SQLite, page statement: {sorted(times)[1]:.1f} us per execution (wall)"]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="bench.statement_cost", description=__doc__)
    p.add_argument("--runs", type=int, default=300, help="executions per variant and round")
    p.add_argument(
        "--others",
        type=int,
        default=0,
        help="addresses of one more owner, as the POST benchmark leaves behind (e.g. 40000)",
    )
    args = p.parse_args(argv)
    counts = (*ACCOUNTS, args.others) if args.others else ACCOUNTS
    with (
        tempfile.TemporaryDirectory(prefix="maskmail-cost-") as tmp,
        database("postgres", Path(tmp), "cost") as pg,
        database("sqlite", Path(tmp), "cost") as lite,
    ):
        keys = []
        for db in (pg, lite):
            run([str(VENV_BIN / "maskmail"), "db", "upgrade"], system_env(db))
            keys.append(seed.load_maskmail(db, counts)[0])
        lines = asyncio.run(_postgres(pg, keys[0], args.runs)) + _sqlite(lite, keys[1], args.runs)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
