"""The database driver under SQLAlchemy: the fast path, and the one place it lives.

Why: for a sub-millisecond statement, SQLAlchemy's async execution path (a greenlet
switch per call, compilation, result wrapping) cost more than the database took to
answer, so the statements every client repeats run on the driver directly. Those are
the listing's page and chunks (store/listing.py), creating an address with its tombstone
and counting its mail (store/addresses.py, store/tombstones.py), the key's last use
(store/accounts.py), and the mail plane's recipient lookup, subdomain holder and reverse
aliases (store/mailflow.py, store/subdomains.py, store/reverse_aliases.py);
docs/benchmarks.md has the measurements. Everything else goes through SQLAlchemy.

The drivers are the stdlib sqlite3 connection behind ``sqlite_inline`` (on the loop's
thread, writers queued) and asyncpg's connection, whose statement cache prepares each
statement once per connection. Connections still come from SQLAlchemy's pool, and an
outage is still StoreUnavailable (store/engine.py).
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy.dialects.postgresql import asyncpg as asyncpg_dialect
from sqlalchemy.dialects.sqlite import pysqlite as sqlite_dialect
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.util import greenlet_spawn

from maskmail.core.errors import MaskmailError
from maskmail.store.engine import is_outage, is_refusal, unavailable_on_outage
from maskmail.store.sqlite_inline import Connection as InlineSqlite

Row = Sequence[Any]
_PLACEHOLDER = re.compile(r"\?(\d*)")


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement's text for SQLite and for PostgreSQL.

    Both are written with ``?`` for the next argument, or ``?N`` for argument N again;
    asyncpg's ``$N`` numbering is done here. A dialect left out is refused when its text
    is asked for, rather than run as an empty statement that returns no rows.
    """

    sqlite: str
    postgresql: str

    @classmethod
    def portable(cls, text: str) -> Statement:
        """The same text for both dialects."""
        return cls(text, numbered(text))

    @classmethod
    def per_dialect(cls, *, sqlite: str = "", postgresql: str = "") -> Statement:
        return cls(sqlite, numbered(postgresql))

    @classmethod
    def from_core(cls, statement: ClauseElement, *order: str, only: str = "") -> Statement:
        """A SQLAlchemy Core statement, compiled once for each dialect, or for ``only``
        that one (the other's text stays empty, so refused). Its parameters are passed
        by position in ``order``: checked here, where the statement is built."""
        texts = {}
        dialects = (sqlite_dialect.dialect(), asyncpg_dialect.dialect())  # type: ignore[no-untyped-call]
        for dialect in dialects:
            if only and dialect.name != only:
                continue
            compiled = statement.compile(dialect=dialect)
            assert isinstance(compiled, SQLCompiler)
            if tuple(compiled.positiontup or ()) != order:
                raise ValueError(f"parameters are {compiled.positiontup}, not {order}")
            texts[dialect.name] = str(compiled)
        return cls(texts.get("sqlite", ""), texts.get("postgresql", ""))

    def text(self, dialect: str) -> str:
        found = {"sqlite": self.sqlite, "postgresql": self.postgresql}.get(dialect)
        if not found:
            raise NotImplementedError(f"this statement has no {dialect} text")
        return found


def numbered(text: str) -> str:
    """``?`` placeholders as ``$1, $2, ...``, and ``?N`` as ``$N`` (our statements have no
    ``?`` in literals)."""
    count = 0

    def number(match: re.Match[str]) -> str:
        nonlocal count
        if match.group(1):
            return f"${match.group(1)}"
        count += 1
        return f"${count}"

    return _PLACEHOLDER.sub(number, text)


class Driver(Protocol):
    """A driver connection, for one request (or one chunk of a streamed listing)."""

    dialect: str

    async def rows(self, statement: Statement, *args: Any) -> Sequence[Row]: ...

    async def bulk_rows(self, statement: Statement, *args: Any) -> Sequence[Row]:
        """``rows``, for a statement that takes milliseconds (a chunk of a listing)."""
        ...

    def writing(self) -> AbstractAsyncContextManager[None]:
        """A write transaction, or nothing when the caller already holds one."""
        ...

    def single_write(self) -> AbstractAsyncContextManager[None]:
        """Around one statement that is atomic alone: on PostgreSQL nothing (BEGIN and
        COMMIT would be two round trips more); SQLite writes in a write transaction, so
        that waiting for another process's write lock never blocks the event loop
        (store/sqlite_inline.py)."""
        ...


class SqliteDriver:
    """Statements run inline; outside ``writing`` each is its own (autocommit) snapshot."""

    dialect = "sqlite"

    def __init__(self, driver: InlineSqlite, managed: bool) -> None:
        self._driver = driver
        self._conn: sqlite3.Connection = driver.sqlite
        self._managed = managed

    async def rows(self, statement: Statement, *args: Any) -> list[Row]:
        return self._conn.execute(statement.sqlite or statement.text("sqlite"), args).fetchall()

    async def bulk_rows(self, statement: Statement, *args: Any) -> list[Row]:
        """On a worker thread: sqlite3 lets go of the GIL while SQLite works, so writing a
        chunk's JSON (milliseconds) runs beside the event loop instead of stopping it.
        The connection is this caller's alone until it goes back to the pool, and it goes
        back only after the statement finished, even when the caller is cancelled."""
        work = asyncio.get_running_loop().run_in_executor(
            None, lambda: self._conn.execute(statement.text("sqlite"), args).fetchall()
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

    def single_write(self) -> AbstractAsyncContextManager[None]:
        return self.writing()


class PgDriver:
    """asyncpg prepares and caches each statement text on first use per connection."""

    dialect = "postgresql"

    def __init__(self, driver: Any, managed: bool, mutex: asyncio.Lock | None = None) -> None:
        self._conn = driver
        self._managed = managed
        # SQLAlchemy's adapter serialises its own use of the connection with this lock;
        # statements sent past the adapter take it too, so the two never overlap. None:
        # the caller holds it for the whole checkout (see DriverPool).
        self._mutex = mutex

    async def rows(self, statement: Statement, *args: Any) -> Sequence[Row]:
        return await self._fetch(statement.postgresql or statement.text("postgresql"), *args)

    async def bulk_rows(self, statement: Statement, *args: Any) -> Sequence[Row]:
        return await self._fetch(statement.postgresql or statement.text("postgresql"), *args)

    async def _fetch(self, text: str, *args: Any) -> Sequence[Row]:
        if self._mutex is None:
            found: Sequence[Row] = await self._conn.fetch(text, *args)
            return found
        async with self._mutex:
            found = await self._conn.fetch(text, *args)
        return found

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[None]:
        if self._managed:
            yield
            return
        async with self._conn.transaction():
            yield

    @asynccontextmanager
    async def single_write(self) -> AsyncIterator[None]:
        yield


def _terminate(pooled: Any) -> None:
    terminate = getattr(pooled.driver_connection, "terminate", None)
    if callable(terminate):
        terminate()


def execute_mutex(pooled: Any) -> asyncio.Lock:
    """The lock SQLAlchemy's asyncpg adapter holds around each of its own statements: a
    private attribute (``_execute_mutex``), hence the upper bound on SQLAlchemy in
    pyproject.toml and tests/store/test_driver.py, which fails when it changes."""
    found = getattr(pooled.dbapi_connection, "_execute_mutex", None)
    if not isinstance(found, asyncio.Lock):
        raise RuntimeError("SQLAlchemy's asyncpg adapter no longer has _execute_mutex")
    return found


def _wrap(pooled: Any, dialect: str, managed: bool) -> Driver:
    if dialect == "sqlite":
        return SqliteDriver(pooled.driver_connection, managed)
    # Inside a SQLAlchemy transaction, lock per statement; a checkout of our own holds
    # the lock throughout, transaction and all.
    return PgDriver(pooled.driver_connection, managed, execute_mutex(pooled) if managed else None)


async def driver_of(conn: AsyncConnection) -> Driver:
    """The driver under a SQLAlchemy connection whose transaction the caller manages."""
    pooled = await conn.get_raw_connection()
    driver = pooled.driver_connection
    assert driver is not None, "a connection checked out of the pool has a driver"
    dialect = conn.dialect.name
    if dialect == "postgresql" and conn.in_transaction() and not driver.is_in_transaction():
        # SQLAlchemy's asyncpg adapter sends BEGIN with its first statement; statements
        # sent to the driver directly before that would each commit on their own.
        await conn.exec_driver_sql("SELECT 1")
    return _wrap(pooled, dialect, managed=True)


async def as_driver(conn: AsyncConnection | Driver) -> Driver:
    """The driver of either connection a store function may be given."""
    return await driver_of(conn) if isinstance(conn, AsyncConnection) else conn


# How long a DriverPool keeps a connection out of SQLAlchemy's pool, at most.
KEEP_SECONDS = 30.0

# Where a request gets its driver connection: ``DriverPool`` in production.
Checkout = Callable[[], AbstractAsyncContextManager[Driver]]


class DriverPool:
    """Driver connections from the engine's pool, one per ``async with``.

    With ``keep``, up to that many stay checked out between uses (docs/architecture.md,
    the fast path), each for at most ``KEEP_SECONDS`` from leaving SQLAlchemy's pool and
    only when outside any transaction; then it goes back through the pool as usual, so
    its recycling and reset still happen. An outage drops every kept one. ``close``
    hands them back: its owner calls it before disposing of the engine.
    """

    def __init__(self, engine: AsyncEngine, keep: int = 0) -> None:
        self._engine = engine
        self._dialect = engine.dialect.name
        size = getattr(engine.sync_engine.pool, "size", lambda: 0)()
        # Never more than half the pool, so SQLAlchemy's own users always find one.
        self._keep = min(keep, size // 2)
        self._kept: list[tuple[float, Any]] = []

    async def _take(self) -> tuple[float, Any]:
        if self._kept:
            return self._kept.pop()
        return time.monotonic(), await self._engine.raw_connection()

    def _idle(self, pooled: Any) -> bool:
        conn = pooled.driver_connection
        if self._dialect == "sqlite":
            return not conn.sqlite.in_transaction
        return not conn.is_in_transaction() and not conn.is_closed()

    async def _give_back(self, since: float, pooled: Any) -> None:
        if (
            len(self._kept) < self._keep
            and time.monotonic() - since < KEEP_SECONDS
            and self._idle(pooled)
        ):
            self._kept.append((since, pooled))
            return
        # Returning it may roll back through the async adapter: needs a greenlet.
        await greenlet_spawn(pooled.close)

    async def close(self) -> None:
        while self._kept:
            await greenlet_spawn(self._kept.pop()[1].close)

    async def _drop_kept(self) -> None:
        while self._kept:
            await greenlet_spawn(self._kept.pop()[1].invalidate)

    @asynccontextmanager
    async def __call__(self) -> AsyncIterator[Driver]:
        with unavailable_on_outage():
            since, pooled = await self._take()
            try:
                if self._dialect == "sqlite":
                    yield _wrap(pooled, self._dialect, managed=False)
                else:
                    async with execute_mutex(pooled):
                        yield _wrap(pooled, self._dialect, managed=False)
            except BaseException as exc:
                # SQLAlchemy never saw the driver's error, so it cannot tell a connection
                # that broke mid-statement (a database outage, a cancelled request) from a
                # good one. A refused statement or a refused request leaves it usable (any
                # transaction was rolled back); anything else, and it is never handed out
                # again. After an outage the others in the pool are dead too; a new pool
                # replaces them, as SQLAlchemy does when it sees a disconnect itself.
                if isinstance(exc, MaskmailError) or is_refusal(exc):
                    await self._give_back(since, pooled)
                    raise
                if isinstance(exc, TimeoutError):
                    # Past MASKMAIL_DB_TIMEOUT the server is not answering: drop the
                    # connection at once rather than wait for it to say goodbye.
                    _terminate(pooled)
                await greenlet_spawn(pooled.invalidate)
                if is_outage(exc):
                    await self._drop_kept()
                    await self._engine.dispose(close=False)
                raise
            await self._give_back(since, pooled)
