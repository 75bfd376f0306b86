"""DriverPool's kept connections: reused, bounded, never kept inside a transaction or past
their time, and handed back by ``close``."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.store import driver as driver_module
from maskmail.store.driver import DriverPool
from maskmail.store.statements import Statement

pytestmark = pytest.mark.anyio
ONE = Statement.portable("SELECT 1")


def checked_out(engine: AsyncEngine) -> int:
    found: int = engine.sync_engine.pool.checkedout()  # type: ignore[attr-defined]
    return found


async def test_a_kept_connection_serves_the_next_checkout_until_close(engine: AsyncEngine) -> None:
    drivers = DriverPool(engine, keep=4)  # the engine's pool has 2: at most 1 is kept
    async with drivers() as driver:
        assert await driver.rows(ONE) == [(1,)]
    assert checked_out(engine) == 1
    async with drivers() as driver:
        assert checked_out(engine) == 1  # the kept one, not another from the pool
        await driver.rows(ONE)
    entered = asyncio.Event()

    async def hold() -> None:
        async with drivers() as held:
            await held.rows(ONE)
            entered.set()
            await asyncio.sleep(0.05)

    async def other() -> None:
        await entered.wait()
        async with drivers() as driver:
            assert checked_out(engine) == 2
            await driver.rows(ONE)

    await asyncio.gather(hold(), other())
    assert checked_out(engine) == 1  # half the pool, never more
    await drivers.close()
    assert checked_out(engine) == 0


async def test_a_connection_inside_a_transaction_goes_back_to_the_pool(
    engine: AsyncEngine,
) -> None:
    drivers = DriverPool(engine, keep=1)
    async with drivers() as driver:
        await driver.rows(Statement.portable("BEGIN"))
    assert checked_out(engine) == 0
    async with drivers() as driver:  # rolled back by the pool on its return
        assert await driver.rows(ONE) == [(1,)]
    await drivers.close()


async def test_a_connection_goes_back_to_the_pool_after_its_time(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(driver_module, "KEEP_SECONDS", 0.0)
    drivers = DriverPool(engine, keep=1)
    async with drivers() as driver:
        await driver.rows(ONE)
    assert checked_out(engine) == 0
