"""Driver connections: a long statement runs beside the event loop, and to its end."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from sqlalchemy import bindparam, select

from maskmail.store import sqlite_inline
from maskmail.store.driver import SqliteDriver
from maskmail.store.statements import Statement
from maskmail.store.tables import users

pytestmark = pytest.mark.anyio
# A statement that takes a while: counting to three million in SQLite.
SLOW = Statement.portable(
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) "
    "SELECT finished(count(*)) FROM c"
)


async def _sqlite_driver(tmp_path: Path, finished: list[float]) -> SqliteDriver:
    driver = await sqlite_inline.connector(str(tmp_path / "raw.db"), 1000)()

    def mark(n: int) -> int:
        finished.append(time.monotonic())
        return n

    driver.sqlite.create_function("finished", 1, mark)
    return SqliteDriver(driver, managed=False)


@pytest.mark.slow
async def test_a_long_sqlite_statement_leaves_the_event_loop_free(tmp_path: Path) -> None:
    finished: list[float] = []
    driver = await _sqlite_driver(tmp_path, finished)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while not finished:
            ticks += 1
            await asyncio.sleep(0.001)

    ticker = asyncio.create_task(tick())
    assert (await driver.bulk_rows(SLOW))[0][0] == 3_000_000
    await ticker
    assert ticks > 5  # the loop ran other work while SQLite counted


@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
async def test_a_cancelled_caller_gets_the_connection_back_only_once_it_is_idle(
    tmp_path: Path,
) -> None:
    finished: list[float] = []
    driver = await _sqlite_driver(tmp_path, finished)
    task = asyncio.create_task(driver.bulk_rows(SLOW))
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The statement had finished before the cancellation reached the caller.
    assert len(finished) == 1
    assert (await driver.rows(Statement.portable("SELECT 1")))[0][0] == 1


def test_a_statement_numbers_its_placeholders_for_postgresql() -> None:
    made = Statement.portable("SELECT ? WHERE a = ? AND b = ?")
    assert made.postgresql == "SELECT $1 WHERE a = $2 AND b = $3"
    again = Statement.per_dialect(sqlite="SELECT ?", postgresql="SELECT ?1, ?2 WHERE x = ?1")
    assert again.postgresql == "SELECT $1, $2 WHERE x = $1"


def test_a_statement_refuses_a_dialect_it_has_no_text_for() -> None:
    only_pg = Statement.per_dialect(postgresql="SELECT ?")
    assert only_pg.text("postgresql") == "SELECT $1"
    with pytest.raises(NotImplementedError, match="sqlite"):
        only_pg.text("sqlite")


async def test_a_driver_refuses_to_run_a_statement_without_its_dialect(tmp_path: Path) -> None:
    driver = await _sqlite_driver(tmp_path, [])
    with pytest.raises(NotImplementedError):
        await driver.rows(Statement.per_dialect(postgresql="SELECT 1"))


def test_a_core_statement_is_compiled_once_per_dialect_with_its_parameter_order() -> None:
    query = select(users.c.id).where(
        users.c.email_key == bindparam("e"), users.c.id > bindparam("n")
    )
    made = Statement.from_core(query, "e", "n")
    assert made.sqlite.endswith("users.email_key = ? AND users.id > ?")
    assert "$1" in made.postgresql and "$2" in made.postgresql and "?" not in made.postgresql
    with pytest.raises(ValueError, match="parameters"):
        Statement.from_core(query, "n", "e")
