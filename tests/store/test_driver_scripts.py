"""Scripts on the driver (store/driver.py): a transaction handed over in one call, run on
one connection, committed or rolled back whole, and an outage still StoreUnavailable."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.core.errors import AddressTaken, StoreUnavailable
from maskmail.store.driver import ONE_WRITE, WRITE, DriverPool, run_on
from maskmail.store.engine import transaction
from maskmail.store.statements import Row, Script, Statement

pytestmark = pytest.mark.anyio


def checked_out(engine: AsyncEngine) -> int:
    found: int = engine.sync_engine.pool.checkedout()  # type: ignore[attr-defined]
    return found


@pytest.fixture
async def table(engine: AsyncEngine) -> AsyncIterator[str]:
    """A scratch table of one integer column, dropped after the test."""
    name = f"scratch_{secrets.token_hex(4)}"
    drivers = DriverPool(engine)
    await drivers.run(_statements(Statement.portable(f"CREATE TABLE {name} (n INTEGER)")), WRITE)
    yield name
    await drivers.run(_statements(Statement.portable(f"DROP TABLE {name}")), WRITE)


def _statements(*statements: Statement, args: Sequence[Any] = ()) -> Script[list[Sequence[Row]]]:
    found = []
    for statement in statements:
        found.append((yield statement, args))
    return found


def _insert(table: str, *values: int, fail: bool = False) -> Script[int]:
    for value in values:
        yield Statement.portable(f"INSERT INTO {table} (n) VALUES (?)"), (value,)
    if fail:
        raise AddressTaken("the script gives up")
    rows = yield Statement.portable(f"SELECT count(*) FROM {table}"), ()
    return int(rows[0][0])


def _count(table: str) -> Script[int]:
    rows = yield Statement.portable(f"SELECT count(*) FROM {table}"), ()
    return int(rows[0][0])


async def test_a_script_gets_each_statements_rows_and_returns_its_result(
    engine: AsyncEngine,
) -> None:
    def script() -> Script[tuple[int, int]]:
        first = yield Statement.portable("SELECT ? + 1"), (1,)
        second = yield Statement.portable("SELECT ? * 10"), (first[0][0],)
        return first[0][0], second[0][0]

    drivers = DriverPool(engine, keep=1)
    assert await drivers.run(script()) == (2, 20)
    assert await drivers.run(script(), bulk=True) == (2, 20)
    assert checked_out(engine) == 1  # kept for the next run
    await drivers.close()
    assert checked_out(engine) == 0


async def test_a_write_script_is_committed_or_rolled_back_whole(
    engine: AsyncEngine, table: str
) -> None:
    drivers = DriverPool(engine, keep=1)
    with pytest.raises(AddressTaken):
        await drivers.run(_insert(table, 1, 2, fail=True), WRITE)
    assert await drivers.run(_count(table)) == 0
    assert await drivers.run(_insert(table, 1, 2), WRITE) == 2
    assert await drivers.run(_count(table)) == 2
    await drivers.close()


async def test_a_refused_statement_rolls_the_script_back_and_keeps_the_connection(
    engine: AsyncEngine, table: str
) -> None:
    def broken() -> Script[None]:
        yield Statement.portable(f"INSERT INTO {table} (n) VALUES (?)"), (1,)
        yield Statement.portable("SELECT * FROM no_such_table"), ()

    drivers = DriverPool(engine, keep=1)
    with pytest.raises(Exception, match="no_such_table"):
        await drivers.run(broken(), WRITE)
    assert await drivers.run(_count(table)) == 0
    assert checked_out(engine) == 1  # a refusal leaves the connection usable
    await drivers.close()


async def test_a_one_write_script_runs_one_statement_on_postgresql(
    engine: AsyncEngine, table: str
) -> None:
    drivers = DriverPool(engine)
    insert = Statement.portable(f"INSERT INTO {table} (n) VALUES (?)")
    await drivers.run(_statements(insert, args=(1,)), ONE_WRITE)
    if drivers.dialect == "postgresql":
        with pytest.raises(RuntimeError, match="one statement"):
            await drivers.run(_statements(insert, insert, args=(5,)), ONE_WRITE)
        assert await drivers.run(_count(table)) == 2  # the first, alone, was atomic
    else:
        await drivers.run(_statements(insert, insert, args=(5,)), ONE_WRITE)
        assert await drivers.run(_count(table)) == 3


async def test_a_script_runs_inside_the_callers_transaction(
    engine: AsyncEngine, table: str
) -> None:
    with pytest.raises(AddressTaken):
        async with transaction(engine) as conn:
            assert await run_on(conn, _insert(table, 7)) == 1
            raise AddressTaken("the caller gives up")
    async with transaction(engine) as conn:
        assert await run_on(conn, _count(table)) == 0


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_an_outage_in_a_script_is_store_unavailable(engine: AsyncEngine) -> None:
    drivers = DriverPool(engine, keep=1)
    ended = Statement.portable("SELECT pg_terminate_backend(pg_backend_pid())")
    with pytest.raises(StoreUnavailable):
        await drivers.run(_statements(ended))
    assert checked_out(engine) == 0  # the dead connection is never handed out again
    assert await drivers.run(_count("users")) >= 0
    await drivers.close()
