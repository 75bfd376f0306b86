"""How long the dashboard's addresses page takes to render, and how big it is.

    .venv/bin/python -m bench.dashboard_render [--addresses 10000] [--runs 200]
        [--database-url postgresql+asyncpg://.../empty_db]

Seeds one account with ``--addresses`` addresses (in a fresh SQLite file unless a URL of
an empty database is given), signs it in, and requests the first page (50 rows) and a
search through the real app in this process (httpx's ASGI transport), so the time is the
server's work without a network. Prints JSON, and exits 1 when a target of issue 14 is
missed: under 50 ms (median) and under 100 KB with 50 rows.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson
from sqlalchemy import insert

from maskmail.app import create_app
from maskmail.config import Settings
from maskmail.store import accounts, sessions
from maskmail.store.clock import now
from maskmail.store.engine import create_engine, transaction
from maskmail.store.migrate import upgrade
from maskmail.store.tables import addresses
from maskmail.web.sessions import COOKIE, hash_token, new_token

TARGET_MS = 50.0
TARGET_BYTES = 100 * 1024
DOMAIN = "relay.example.com"


async def seed(url: str, count: int) -> str:
    """One user with ``count`` addresses and a live session; returns the session token."""
    engine = create_engine(url, pool_size=1)
    token = new_token()
    try:
        async with transaction(engine) as conn:
            user_id = await accounts.add_user(conn, "bench@example.com")
            created = now()
            rows = [
                {
                    "user_id": user_id,
                    "address": f"bench{n:07d}",
                    "domain": DOMAIN,
                    "description": f"site number {n}",
                    "created_time": created - count + n,
                    "num_forwarded": n % 97,
                }
                for n in range(count)
            ]
            for start in range(0, count, 5000):
                await conn.execute(insert(addresses), rows[start : start + 5000])
            await sessions.start_session(conn, user_id, hash_token(token), lifetime=86_400)
    finally:
        await engine.dispose()
    return token


async def measure(url: str, token: str, runs: int) -> dict[str, object]:
    app = create_app(Settings(database_url=url, domain=DOMAIN))
    results: dict[str, object] = {}
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 1))
        async with httpx.AsyncClient(
            transport=transport, base_url="http://bench", cookies={COOKIE: token}
        ) as client:
            for name, path in (("first_page", "/"), ("search", "/?q=number 12")):
                times = []
                size = 0
                for _ in range(runs):
                    started = time.perf_counter()
                    answer = await client.get(path)
                    times.append((time.perf_counter() - started) * 1000)
                    assert answer.status_code == 200, answer.status_code
                    size = len(answer.content)
                rows = answer.text.count('<tr id="row-')
                times.sort()
                results[name] = {
                    "rows": rows,
                    "bytes": size,
                    "median_ms": round(statistics.median(times), 2),
                    "p95_ms": round(times[int(len(times) * 0.95) - 1], 2),
                }
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addresses", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        upgrade(url)
        token = asyncio.run(seed(url, args.addresses))
        found = asyncio.run(measure(url, token, args.runs))
    first = found["first_page"]
    assert isinstance(first, dict)
    met = first["median_ms"] < TARGET_MS and first["bytes"] < TARGET_BYTES and first["rows"] == 50
    print(orjson.dumps({"addresses": args.addresses, **found, "targets_met": met}).decode())
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
