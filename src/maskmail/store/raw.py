"""The database driver under SQLAlchemy, for the few statements every client repeats.

A page GET through SQLAlchemy's async Core spent more time in its execution path (a
greenlet switch per call, statement compilation and result wrapping) than the database
took to answer (docs/benchmarks.md). DESIGN.md allows the driver to be used directly for
sub-millisecond statements: the stdlib sqlite3 connection behind ``sqlite_inline`` (on the
loop's thread, writers queued) and asyncpg's connection, whose statement cache prepares
each hot statement once per connection. Connections still come from SQLAlchemy's pool.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.util import greenlet_spawn

from maskmail.store.engine import is_driver_outage, unavailable_on_outage
from maskmail.store.sqlite_inline import Connection as InlineSqlite

Row = Sequence[Any]


@dataclass(frozen=True, slots=True)
class Sql:
    """One statement in both dialects: ``?`` placeholders, numbered ``$n`` for asyncpg."""

    sqlite: str
    postgresql: str

    @classmethod
    def same(cls, text: str) -> Sql:
        return cls(text, numbered(text))

    @classmethod
    def each(cls, sqlite: str, postgresql: str) -> Sql:
        return cls(sqlite, numbered(postgresql))


def numbered(text: str) -> str:
    """``?`` placeholders as ``$1, $2, ...`` (our statements have no ``?`` in literals)."""
    parts = text.split("?")
    out = [parts[0]]
    for n, part in enumerate(parts[1:], start=1):
        out.append(f"${n}{part}")
    return "".join(out)


class Raw(Protocol):
    """A driver connection, for one request (or one chunk of a streamed listing)."""

    dialect: str

    async def rows(self, sql: Sql, *args: Any) -> Sequence[Row]: ...

    async def bulk_rows(self, sql: Sql, *args: Any) -> Sequence[Row]:
        """``rows``, for a statement that takes milliseconds (a chunk of a listing)."""
        ...

    def writing(self) -> AbstractAsyncContextManager[None]:
        """A write transaction, or nothing when the caller already holds one."""
        ...


class SqliteRaw:
    """Statements run inline; outside ``writing`` each is its own (autocommit) snapshot."""

    dialect = "sqlite"

    def __init__(self, driver: InlineSqlite, managed: bool) -> None:
        self._driver = driver
        self._conn: sqlite3.Connection = driver.sqlite
        self._managed = managed

    async def rows(self, sql: Sql, *args: Any) -> list[Row]:
        return self._conn.execute(sql.sqlite, args).fetchall()

    async def bulk_rows(self, sql: Sql, *args: Any) -> list[Row]:
        """On a worker thread: sqlite3 lets go of the GIL while SQLite works, so writing a
        chunk's JSON (milliseconds) runs beside the event loop instead of stopping it.
        The connection is this caller's alone until it goes back to the pool, and it goes
        back only after the statement finished, even when the caller is cancelled."""
        work = asyncio.get_running_loop().run_in_executor(
            None, lambda: self._conn.execute(sql.sqlite, args).fetchall()
        )
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            await asyncio.wait([work])
            raise

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[None]:
        if self._managed:
            yield
            return
        await self._driver.begin_write()
        try:
            yield
        except BaseException:
            await self._driver.rollback()
            raise
        await self._driver.commit()


class PgRaw:
    """asyncpg prepares and caches each statement text on first use per connection."""

    dialect = "postgresql"

    def __init__(self, driver: Any, managed: bool, mutex: asyncio.Lock | None = None) -> None:
        self._conn = driver
        self._managed = managed
        # SQLAlchemy's adapter serialises its own use of the connection with this lock;
        # statements sent past the adapter take it too, so the two never overlap. None:
        # the caller holds it for the whole checkout (see Source).
        self._mutex = mutex

    async def rows(self, sql: Sql, *args: Any) -> Sequence[Row]:
        return await self._fetch(sql, *args)

    async def bulk_rows(self, sql: Sql, *args: Any) -> Sequence[Row]:
        return await self._fetch(sql, *args)

    async def _fetch(self, sql: Sql, *args: Any) -> Sequence[Row]:
        if self._mutex is None:
            found: Sequence[Row] = await self._conn.fetch(sql.postgresql, *args)
            return found
        async with self._mutex:
            found = await self._conn.fetch(sql.postgresql, *args)
        return found

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[None]:
        if self._managed:
            yield
            return
        async with self._conn.transaction():
            yield


def _mutex_of(fairy: Any) -> asyncio.Lock:
    found = getattr(fairy.dbapi_connection, "_execute_mutex", None)
    return found if isinstance(found, asyncio.Lock) else asyncio.Lock()


def _wrap(fairy: Any, dialect: str, managed: bool) -> Raw:
    if dialect == "sqlite":
        return SqliteRaw(fairy.driver_connection, managed)
    # Inside a SQLAlchemy transaction, lock per statement; a checkout of our own holds
    # the lock throughout, transaction and all.
    return PgRaw(fairy.driver_connection, managed, _mutex_of(fairy) if managed else None)


async def of_connection(conn: AsyncConnection) -> Raw:
    """The driver under a SQLAlchemy connection whose transaction the caller manages."""
    fairy = await conn.get_raw_connection()
    driver = fairy.driver_connection
    assert driver is not None, "a connection checked out of the pool has a driver"
    dialect = conn.dialect.name
    if dialect == "postgresql" and conn.in_transaction() and not driver.is_in_transaction():
        # SQLAlchemy's asyncpg adapter sends BEGIN with its first statement; statements
        # sent to the driver directly before that would each commit on their own.
        await conn.exec_driver_sql("SELECT 1")
    return _wrap(fairy, dialect, managed=True)


# Where a request gets its driver connection: the pool, or a test's own connection.
RawSource = Callable[[], AbstractAsyncContextManager[Raw]]


class Source:
    """Driver connections from the engine's pool, one per ``async with``."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._dialect = engine.dialect.name

    @asynccontextmanager
    async def __call__(self) -> AsyncIterator[Raw]:
        with unavailable_on_outage():
            fairy = await self._engine.raw_connection()
            try:
                if self._dialect == "sqlite":
                    yield _wrap(fairy, self._dialect, managed=False)
                else:
                    async with _mutex_of(fairy):
                        yield _wrap(fairy, self._dialect, managed=False)
            except BaseException as exc:
                # SQLAlchemy never saw the driver's error, so it cannot tell a connection
                # that broke mid-statement (a database outage, a cancelled request) from a
                # good one: never hand this one out again. After an outage the others in
                # the pool are dead too; a new pool replaces them, as SQLAlchemy does when
                # it sees a disconnect itself.
                await greenlet_spawn(fairy.invalidate)
                if is_driver_outage(exc):
                    await self._engine.dispose(close=False)
                raise
            # Returning it may roll back through the async adapter: needs a greenlet.
            await greenlet_spawn(fairy.close)
