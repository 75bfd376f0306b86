"""SQLite without a thread hop per call: the stdlib driver, run on the event loop's thread.

aiosqlite sends every call (cursor, execute, fetch, close, commit) to its own thread. Under
load each hop waits for the GIL behind the event loop, and a page GET makes many of them
(docs/benchmarks.md). Our statements are short, so they run inline instead, behind the
async shape SQLAlchemy's aiosqlite dialect expects. That shape is the adapter's private
one: tests/store/test_library_internals.py fails when it changes, and pyproject.toml
bounds SQLAlchemy.

The one call that can wait is taking the write lock (``BEGIN IMMEDIATE``). Writers of one
process queue on an asyncio lock, so inline they never wait for each other; the lock is
tried without waiting, and only when another process holds it does the wait (up to the
busy timeout) move to a thread, so the event loop never blocks on another process.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

WRITE_BEGIN = "BEGIN IMMEDIATE"


class Cursor:
    """An async face over a ``sqlite3.Cursor``; every method completes without waiting."""

    def __init__(self, owner: Connection) -> None:
        self._owner = owner
        self._cursor = owner._conn.cursor()
        self.arraysize = self._cursor.arraysize

    async def __aenter__(self) -> Cursor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    async def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Cursor:
        if sql.strip().upper() == WRITE_BEGIN:
            await self._owner.begin_write()
        else:
            self._cursor.execute(sql, parameters)
        return self

    async def executemany(self, sql: str, parameters: Iterable[Sequence[Any]]) -> Cursor:
        self._cursor.executemany(sql, parameters)
        return self

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        return self._cursor.fetchmany(self.arraysize if size is None else size)

    async def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    async def close(self) -> None:
        self._cursor.close()

    def __aiter__(self) -> Cursor:
        return self

    async def __anext__(self) -> Any:
        row = self._cursor.fetchone()
        if row is None:
            raise StopAsyncIteration
        return row


class Connection:
    """What SQLAlchemy's aiosqlite adapter calls on an ``aiosqlite.Connection``."""

    def __init__(self, conn: sqlite3.Connection, write_lock: asyncio.Lock, busy_ms: int) -> None:
        self._conn = conn
        # The stdlib connection, for statements run inline (store/driver.py): a plain
        # attribute, read on every statement of the fast path.
        self.sqlite = conn
        self._write_lock = write_lock
        self._busy_ms = busy_ms
        self._holds_lock = False

    @property
    def _connection(self) -> sqlite3.Connection | None:
        # The adapter skips commit and rollback on a closed connection by testing this.
        return self._conn

    @property
    def isolation_level(self) -> str | None:
        return self._conn.isolation_level

    def cursor(self) -> Cursor:
        return Cursor(self)

    async def begin_write(self) -> None:
        """Take SQLite's write lock: queue behind this process's writers, then try at once;
        only a lock held by another process is waited for, in a thread."""
        await self._write_lock.acquire()
        self._holds_lock = True
        try:
            self._conn.execute("PRAGMA busy_timeout=0")
            try:
                self._conn.execute(WRITE_BEGIN)
                return
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:
                    raise
            finally:
                self._conn.execute(f"PRAGMA busy_timeout={self._busy_ms}")
            await asyncio.to_thread(self._conn.execute, WRITE_BEGIN)
        except BaseException:
            self._release()
            raise

    @asynccontextmanager
    async def write_transaction(self) -> AsyncIterator[sqlite3.Connection]:
        """One write transaction, in this process's writer queue: committed when the block
        ends, rolled back when it raises (store/driver.py runs a script's statements in it)."""
        await self.begin_write()
        try:
            yield self._conn
        except BaseException:
            await self.rollback()
            raise
        await self.commit()

    def _release(self) -> None:
        if self._holds_lock and not self._conn.in_transaction:
            self._holds_lock = False
            self._write_lock.release()

    async def commit(self) -> None:
        try:
            self._conn.commit()
        finally:
            self._release()

    async def rollback(self) -> None:
        try:
            self._conn.rollback()
        finally:
            self._release()

    async def create_function(self, *args: Any, **kw: Any) -> None:
        self._conn.create_function(*args, **kw)

    async def close(self) -> None:
        try:
            self._conn.close()
        finally:
            if self._holds_lock:
                self._holds_lock = False
                self._write_lock.release()

    def stop(self) -> None:
        """Terminate: SQLAlchemy calls this when it gives up on a connection."""
        self._conn.close()


def connector(path: str, busy_ms: int) -> Callable[[], Awaitable[Connection]]:
    """An ``async_creator`` for one engine: its connections share one write queue."""
    write_lock = asyncio.Lock()

    async def connect() -> Connection:
        # Autocommit mode: transactions are begun explicitly (see engine.py). The thread
        # fallback in begin_write uses the connection from a worker thread, one call at a time.
        conn = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, timeout=busy_ms / 1000
        )
        return Connection(conn, write_lock, busy_ms)

    return connect
