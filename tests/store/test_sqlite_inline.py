"""The inline SQLite driver keeps the write-lock recipe: writers queue, readers never wait."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.store.engine import create_engine, transaction

pytestmark = pytest.mark.anyio


@pytest.fixture
async def sqlite_engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'inline.db'}", pool_size=5)
    async with transaction(engine) as conn:
        await conn.execute(text("CREATE TABLE tally (n INTEGER NOT NULL)"))
        await conn.execute(text("INSERT INTO tally (n) VALUES (0)"))
    yield engine
    await engine.dispose()


async def _read_then_write(engine: AsyncEngine) -> None:
    """A read-modify-write that yields to the loop in between: only safe if the write
    lock is taken at BEGIN and held until COMMIT."""
    async with transaction(engine) as conn:
        n = (await conn.execute(text("SELECT n FROM tally"))).scalar_one()
        await asyncio.sleep(0.001)
        await conn.execute(text("UPDATE tally SET n = :n"), {"n": n + 1})


async def _tally(engine: AsyncEngine) -> int:
    async with transaction(engine, readonly=True) as conn:
        return int((await conn.execute(text("SELECT n FROM tally"))).scalar_one())


async def test_writers_of_one_engine_queue_for_the_lock(sqlite_engine: AsyncEngine) -> None:
    await asyncio.gather(*(_read_then_write(sqlite_engine) for _ in range(20)))
    assert await _tally(sqlite_engine) == 20


async def test_a_writer_held_elsewhere_is_waited_for_off_the_loop(
    sqlite_engine: AsyncEngine, tmp_path: Path
) -> None:
    # A second engine is what a second process looks like: its own connections and queue.
    # If its writers waited for SQLite's lock on the event loop, the first engine could
    # never commit and both would fail with "database is locked" after the busy timeout.
    other = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'inline.db'}", pool_size=5)
    try:
        jobs = [_read_then_write(engine) for _ in range(10) for engine in (sqlite_engine, other)]
        await asyncio.wait_for(asyncio.gather(*jobs), timeout=8)
    finally:
        await other.dispose()
    assert await _tally(sqlite_engine) == 20


async def test_readers_do_not_wait_for_a_writer(sqlite_engine: AsyncEngine) -> None:
    writing = asyncio.Event()
    release = asyncio.Event()

    async def writer() -> None:
        async with transaction(sqlite_engine) as conn:
            await conn.execute(text("UPDATE tally SET n = 99"))
            writing.set()
            await release.wait()

    task = asyncio.create_task(writer())
    await writing.wait()
    # The write is not committed yet, and reading neither blocks nor sees it.
    assert await asyncio.wait_for(_tally(sqlite_engine), timeout=2) == 0
    release.set()
    await task
    assert await _tally(sqlite_engine) == 99


async def test_a_failed_write_releases_the_queue(sqlite_engine: AsyncEngine) -> None:
    with pytest.raises(RuntimeError):
        async with transaction(sqlite_engine) as conn:
            await conn.execute(text("UPDATE tally SET n = 5"))
            raise RuntimeError("boom")
    await asyncio.wait_for(_read_then_write(sqlite_engine), timeout=2)
    assert await _tally(sqlite_engine) == 1
