"""WAL checkpoints on SQLite run on a worker thread, never inside a request's COMMIT."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.store import sqlite_inline
from maskmail.store.engine import create_engine, transaction

pytestmark = pytest.mark.anyio

EVERY = sqlite_inline.CHECKPOINT_EVERY
Row = tuple[int, int, int]


@pytest.fixture
async def sqlite_engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'ckpt.db'}", pool_size=3)
    async with transaction(engine) as conn:
        await conn.execute(text("CREATE TABLE notes (body TEXT NOT NULL)"))
    yield engine
    await engine.dispose()


async def _write(engine: AsyncEngine, times: int) -> None:
    for _ in range(times):
        async with transaction(engine) as conn:
            await conn.execute(text("INSERT INTO notes (body) VALUES ('x')"))


async def _wait_for(event: threading.Event) -> bool:
    return await asyncio.to_thread(event.wait, 5)


async def test_the_checkpoint_runs_off_the_loop_and_empties_the_wal(
    sqlite_engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = sqlite_inline.checkpoint
    threads: list[int] = []
    results: list[Row] = []
    done = threading.Event()

    def recording(path: str) -> Row:
        threads.append(threading.get_ident())
        results.append(real(path))
        done.set()
        return results[-1]

    monkeypatch.setattr(sqlite_inline, "checkpoint", recording)
    # The table's creation was the first write commit.
    await _write(sqlite_engine, EVERY - 1)
    assert await _wait_for(done)
    assert threads and threading.get_ident() not in threads
    busy, log, checkpointed = results[0]
    assert busy == 0 and log > 0 and checkpointed == log


async def test_no_two_checkpoints_run_at_once(
    sqlite_engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = threading.Event()
    release = threading.Event()
    calls: list[str] = []

    def slow(path: str) -> Row:
        calls.append(path)
        started.set()
        release.wait(5)
        return (0, 0, 0)

    monkeypatch.setattr(sqlite_inline, "checkpoint", slow)
    try:
        await _write(sqlite_engine, EVERY - 1)
        assert await _wait_for(started)
        await _write(sqlite_engine, 2 * EVERY)
        assert len(calls) == 1
    finally:
        release.set()
    started.clear()
    for _ in range(50):
        await asyncio.sleep(0.01)
    await _write(sqlite_engine, EVERY)
    assert await _wait_for(started)
    assert len(calls) == 2


async def test_a_failing_checkpoint_leaves_writes_working(
    sqlite_engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    failed = threading.Event()

    def failing(path: str) -> Row:
        calls.append(path)
        failed.set()
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(sqlite_inline, "checkpoint", failing)
    await _write(sqlite_engine, EVERY - 1)
    assert await _wait_for(failed)
    failed.clear()
    await asyncio.sleep(0.05)
    await _write(sqlite_engine, EVERY)
    assert await _wait_for(failed)
    assert len(calls) == 2
    async with transaction(sqlite_engine, readonly=True) as conn:
        count = (await conn.execute(text("SELECT count(*) FROM notes"))).scalar_one()
    assert count == 2 * EVERY - 1


async def test_an_engine_in_memory_has_no_background_checkpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []

    def recording(path: str) -> Row:
        calls.append(path)
        return (0, 0, 0)

    monkeypatch.setattr(sqlite_inline, "checkpoint", recording)
    # create_engine refuses a database in memory, but the connector must not assume it.
    conn = await sqlite_inline.connector(":memory:", 1000)()
    try:
        async with conn.write_transaction() as raw:
            raw.execute("CREATE TABLE notes (body TEXT NOT NULL)")
        for _ in range(EVERY):
            async with conn.write_transaction() as raw:
                raw.execute("INSERT INTO notes (body) VALUES ('x')")
        await asyncio.sleep(0.05)
    finally:
        await conn.close()
    assert calls == []


async def test_serving_connections_keep_autocheckpoint_only_as_a_backstop(
    sqlite_engine: AsyncEngine,
) -> None:
    async with transaction(sqlite_engine, readonly=True) as conn:
        pages = (await conn.exec_driver_sql("PRAGMA wal_autocheckpoint")).scalar_one()
    assert pages == sqlite_inline.AUTOCHECKPOINT_BACKSTOP_PAGES
    assert pages > EVERY
