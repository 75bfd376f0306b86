"""Through PgBouncer in transaction pooling: the URL's cache switch keeps statements working.

Slow set: it runs /usr/sbin/pgbouncer, which only ``make test`` installs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from maskmail.store.driver import driver_of
from maskmail.store.engine import create_engine
from maskmail.store.statements import Statement
from tests.pgbouncer import running_pgbouncer
from tests.support import fresh_database

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def pooled(tmp_path: Path) -> Iterator[str]:
    with fresh_database("postgres", tmp_path) as url, running_pgbouncer(url, tmp_path) as through:
        yield through


async def _hammer(url: str) -> None:
    """Two engines (two processes' worth) sharing PgBouncer's few server connections."""
    engines = [create_engine(url, pool_size=4) for _ in range(2)]
    statement = Statement.per_dialect(sqlite="SELECT ? + 1", postgresql="SELECT ?::int + 1")

    async def work(n: int) -> None:
        for i in range(25):
            async with engines[n % 2].begin() as conn:
                assert await conn.scalar(text("SELECT CAST(:x AS integer) + 1"), {"x": i}) == i + 1
                driver = await driver_of(conn)
                assert (await driver.rows(statement, i))[0][0] == i + 1

    try:
        await asyncio.gather(*(work(n) for n in range(8)))
    finally:
        for engine in engines:
            await engine.dispose()


def test_statements_work_with_the_cache_off(pooled: str) -> None:
    asyncio.run(_hammer(pooled))


def test_default_engine_is_refused_by_pgbouncer(pooled: str) -> None:
    """Why the switch exists: PgBouncer refuses the plan_cache_mode startup parameter."""
    default = pooled.replace("?prepared_statement_cache_size=0", "")
    with pytest.raises(DBAPIError, match="plan_cache_mode"):
        asyncio.run(_hammer(default))
