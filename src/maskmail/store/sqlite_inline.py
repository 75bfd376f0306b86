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

WAL checkpoints are taken off the request path too. SQLite's automatic checkpoint runs
inside the COMMIT that crosses its threshold, which here is on the event loop, so one
request in many paid for copying the log into the database. Instead, every
``CHECKPOINT_EVERY`` write commits an engine starts a passive checkpoint on a worker
thread, on a connection of its own, one at a time per engine; it never waits for
readers or writers, and another process's checkpoint merely makes it return early.
The automatic checkpoint stays on the serving connections, with a far higher
threshold (engine.py), to bound the log should the background ones fail or fall behind.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

WRITE_BEGIN = "BEGIN IMMEDIATE"

# Often enough that the log stays small, rarely enough that a thread hop per checkpoint
# is nothing beside the commits between them.
CHECKPOINT_EVERY = 100
# A backstop only: the automatic checkpoint of the serving connections, in pages, far
# beyond what the background checkpoints let the log grow to while they keep up.
AUTOCHECKPOINT_BACKSTOP_PAGES = 10_000

log = logging.getLogger(__name__)


def checkpoint(path: str) -> tuple[int, int, int]:
    """A passive checkpoint of the database at ``path``, on a connection of its own:
    SQLite's (busy, log frames, checkpointed frames)."""
    uri = f"file:{urllib.parse.quote(path)}?mode=rw"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    try:
        busy, frames, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return int(busy), int(frames), int(done)
    finally:
        conn.close()


def _checkpoint_quietly(path: str) -> None:
    try:
        checkpoint(path)
    except Exception as exc:  # the automatic checkpoint remains; writes must go on
        log.warning("background WAL checkpoint failed: %s: %s", type(exc).__name__, exc)


class Checkpoints:
    """One engine's background checkpoints: counts its write commits and starts one
    checkpoint, on the default executor, every ``CHECKPOINT_EVERY``, never two at once."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._commits = 0
        self._running: asyncio.Future[None] | None = None

    def committed(self) -> None:
        self._commits += 1
        if self._commits < CHECKPOINT_EVERY:
            return
        if self._running is not None and not self._running.done():
            return
        self._commits = 0
        try:
            self._running = asyncio.get_running_loop().run_in_executor(
                None, _checkpoint_quietly, self._path
            )
        except RuntimeError:  # the loop is shutting down its executor: skip this one
            self._running = None


def has_file(path: str) -> bool:
    """Whether ``path`` names a database file (not memory, a temporary or a URI)."""
    return path not in ("", ":memory:") and not path.startswith("file:")


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

    def __init__(
        self,
        conn: sqlite3.Connection,
        write_lock: asyncio.Lock,
        busy_ms: int,
        checkpoints: Checkpoints | None = None,
    ) -> None:
        self._conn = conn
        # The stdlib connection, for statements run inline (store/driver.py): a plain
        # attribute, read on every statement of the fast path.
        self.sqlite = conn
        self._write_lock = write_lock
        self._busy_ms = busy_ms
        self._holds_lock = False
        self._checkpoints = checkpoints

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
        writing = self._holds_lock
        try:
            self._conn.commit()
        finally:
            self._release()
        if writing and self._checkpoints is not None:
            self._checkpoints.committed()

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
    checkpoints = Checkpoints(path) if has_file(path) else None

    async def connect() -> Connection:
        # Autocommit mode: transactions are begun explicitly (see engine.py). The thread
        # fallback in begin_write uses the connection from a worker thread, one call at a time.
        conn = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, timeout=busy_ms / 1000
        )
        return Connection(conn, write_lock, busy_ms, checkpoints)

    return connect
