"""Driver connections: a long statement runs beside the event loop, and to its end."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from maskmail.store import sqlite_inline
from maskmail.store.raw import Sql, SqliteRaw

pytestmark = pytest.mark.anyio
# A statement that takes a while: counting to three million in SQLite.
SLOW = Sql.same(
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) "
    "SELECT finished(count(*)) FROM c"
)


async def _raw(tmp_path: Path, finished: list[float]) -> SqliteRaw:
    driver = await sqlite_inline.connector(str(tmp_path / "raw.db"), 1000)()

    def mark(n: int) -> int:
        finished.append(time.monotonic())
        return n

    driver.sqlite.create_function("finished", 1, mark)
    return SqliteRaw(driver, managed=False)


async def test_a_long_sqlite_statement_leaves_the_event_loop_free(tmp_path: Path) -> None:
    finished: list[float] = []
    raw = await _raw(tmp_path, finished)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while not finished:
            ticks += 1
            await asyncio.sleep(0.001)

    ticker = asyncio.create_task(tick())
    assert (await raw.bulk_rows(SLOW))[0][0] == 3_000_000
    await ticker
    assert ticks > 5  # the loop ran other work while SQLite counted


async def test_a_cancelled_caller_gets_the_connection_back_only_once_it_is_idle(
    tmp_path: Path,
) -> None:
    finished: list[float] = []
    raw = await _raw(tmp_path, finished)
    task = asyncio.create_task(raw.bulk_rows(SLOW))
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The statement had finished before the cancellation reached the caller.
    assert len(finished) == 1
    assert (await raw.rows(Sql.same("SELECT 1")))[0][0] == 1
