"""DriverPool's kept connections: reused, bounded, never kept inside a transaction or past
their time, and handed back by ``close``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.core.errors import StoreUnavailable
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


async def test_with_hand_over_reads_wait_for_a_kept_one_and_writes_take_the_pool(
    engine: AsyncEngine,
) -> None:
    drivers = DriverPool(engine, keep=1, hand_over=True)
    async with drivers() as held:
        await held.rows(ONE)
        reads = [asyncio.create_task(drivers.run(script_of(ONE))) for _ in range(5)]
        await asyncio.sleep(0.02)
        # Without hand_over they take the pool's second connection and are done.
        assert not any(read.done() for read in reads)
        assert checked_out(engine) == 1
        async with drivers() as writer:  # a write does not wait: the pool's second one
            assert checked_out(engine) == 2
            assert await writer.rows(ONE) == [(1,)]
    assert await asyncio.wait_for(asyncio.gather(*reads), 5) == [[(1,)]] * 5
    assert checked_out(engine) == 1
    await drivers.close()
    assert checked_out(engine) == 0


def script_of(statement: Statement) -> Any:
    rows = yield statement, ()
    return rows


async def test_a_use_that_stops_waiting_leaves_no_connection_behind(engine: AsyncEngine) -> None:
    drivers = DriverPool(engine, keep=1, hand_over=True)
    holder = drivers()
    await holder.__aenter__()
    waiting = asyncio.create_task(drivers.run(script_of(ONE)))
    await asyncio.sleep(0.01)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await holder.__aexit__(None, None, None)
    assert checked_out(engine) == 1
    assert await drivers.run(script_of(ONE)) == [(1,)]
    assert checked_out(engine) == 1
    await drivers.close()
    assert checked_out(engine) == 0


async def test_a_connection_handed_to_a_use_as_it_is_cancelled_goes_to_the_next(
    engine: AsyncEngine,
) -> None:
    drivers = DriverPool(engine, keep=1, hand_over=True)
    holder = drivers()
    await holder.__aenter__()
    cancelled = asyncio.create_task(drivers.run(script_of(ONE)))
    following = asyncio.create_task(drivers.run(script_of(ONE)))
    await asyncio.sleep(0.01)
    await holder.__aexit__(None, None, None)  # handed to ``cancelled``, not yet running
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert await asyncio.wait_for(following, 5) == [(1,)]
    assert checked_out(engine) == 1
    await drivers.close()
    assert checked_out(engine) == 0


async def test_a_use_that_waits_too_long_is_told_the_database_is_unavailable(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(driver_module, "HAND_OVER_WAIT", 0.05)
    drivers = DriverPool(engine, keep=1, hand_over=True)
    async with drivers():
        with pytest.raises(StoreUnavailable):
            await drivers.run(script_of(ONE))
    assert checked_out(engine) == 1
    await drivers.close()
    assert checked_out(engine) == 0


async def test_a_broken_connection_makes_room_for_a_waiting_use(engine: AsyncEngine) -> None:
    drivers = DriverPool(engine, keep=1, hand_over=True)
    waiting: asyncio.Task[Any] | None = None
    with pytest.raises(RuntimeError):
        async with drivers():
            waiting = asyncio.create_task(drivers.run(script_of(ONE)))
            await asyncio.sleep(0.01)
            raise RuntimeError("the connection is not to be trusted")
    assert waiting is not None
    assert await asyncio.wait_for(waiting, 5) == [(1,)]
    assert checked_out(engine) == 1
    await drivers.close()
    assert checked_out(engine) == 0
