"""DriverPool's kept connections: reused, bounded, never kept inside a transaction or past
their time, and handed back by ``close``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.core.errors import StoreUnavailable
from maskmail.store import driver as driver_module
from maskmail.store.driver import WRITE, DriverPool
from maskmail.store.engine import create_engine
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


@pytest.fixture
async def wide_engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """A pool of 4: writes may take 3 of them (all but a quarter)."""
    engine = create_engine(database_url, pool_size=4)
    yield engine
    await engine.dispose()


async def test_with_hand_over_reads_wait_for_a_kept_one_and_writes_take_the_pool(
    wide_engine: AsyncEngine,
) -> None:
    engine = wide_engine
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


async def test_a_connection_passed_on_by_a_cancelled_use_is_kept_only_within_keep(
    wide_engine: AsyncEngine,
) -> None:
    engine = wide_engine
    drivers = DriverPool(engine, keep=1, hand_over=True)
    reader = drivers()
    await reader.__aenter__()  # the one a read may hold: the next read waits
    cancelled = asyncio.create_task(drivers.run(script_of(ONE)))
    await asyncio.sleep(0.01)
    # A write takes a second connection from the pool and, given back, is the one kept.
    assert await drivers.run(script_of(ONE), WRITE) == [(1,)]
    assert checked_out(engine) == 2
    await reader.__aexit__(None, None, None)  # handed to ``cancelled``, not yet running
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert checked_out(engine) == 1  # keep is 1: the second went back to the pool
    await drivers.close()
    assert checked_out(engine) == 0


async def test_a_use_that_waits_too_long_is_told_the_database_is_unavailable(
    engine: AsyncEngine,
) -> None:
    drivers = DriverPool(engine, keep=1, hand_over=True, wait=0.05)
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


async def test_with_hand_over_a_waiting_write_is_served_before_a_later_one(
    engine: AsyncEngine,
) -> None:
    """A write that found every connection busy gets the next one given back; a write
    that arrives after it waits behind it instead of taking that one first."""
    drivers = DriverPool(engine, keep=1, hand_over=True)
    order: list[str] = []

    async def write(name: str) -> None:
        async with drivers() as driver:
            await driver.rows(ONE)
            order.append(name)

    held = drivers()
    await held.__aenter__()
    async with engine.connect() as other:  # SQLAlchemy's own user holds the pool's second
        await other.execute(text("SELECT 1"))
        first = asyncio.create_task(write("first"))
        await asyncio.sleep(0.02)
        await held.__aexit__(None, None, None)
        later = asyncio.create_task(write("later"))
        await asyncio.wait_for(asyncio.gather(first, later), 5)
    assert order == ["first", "later"]
    assert checked_out(engine) == 1
    await drivers.close()
    assert checked_out(engine) == 0


async def test_with_hand_over_queued_writes_leave_sqlalchemy_a_connection(
    engine: AsyncEngine,
) -> None:
    drivers = DriverPool(engine, keep=1, hand_over=True)
    held = drivers()
    await held.__aenter__()
    writes = [asyncio.create_task(drivers.run(script_of(ONE), WRITE)) for _ in range(3)]
    await asyncio.sleep(0.02)
    assert not any(write.done() for write in writes)
    async with asyncio.timeout(5), engine.connect() as other:
        assert (await other.execute(text("SELECT 1"))).scalar() == 1
    await held.__aexit__(None, None, None)
    assert await asyncio.wait_for(asyncio.gather(*writes), 5) == [[(1,)]] * 3
    await drivers.close()
    assert checked_out(engine) == 0
