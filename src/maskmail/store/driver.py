"""The database driver under SQLAlchemy: the fast path, and the one place it lives.

Why: for a sub-millisecond statement, SQLAlchemy's async execution path (a greenlet
switch per call, compilation, result wrapping) cost more than the database took to
answer, so the statements every client repeats run on the driver directly. Those are
the listing's page and chunks (store/listing.py), creating an address with its tombstone
and counting its mail (store/addresses.py, store/tombstones.py), the keys' last use
(store/accounts.py), and the mail plane's recipient lookup, subdomain holder and reverse
aliases (store/mailflow.py, store/subdomains.py, store/reverse_aliases.py);
docs/benchmarks.md has the measurements. Everything else goes through SQLAlchemy.

The drivers are the stdlib sqlite3 connection behind ``sqlite_inline`` (on the loop's
thread, writers queued) and asyncpg's connection, whose statement cache prepares each
statement once per connection. Connections still come from SQLAlchemy's pool, and an
outage is still StoreUnavailable (store/engine.py).

One entry per transaction. A store module writes a transaction as a *script*: a
generator that yields each statement with its arguments and is sent back its rows, and
returns the result::

    def page(key_hash: str, offset: int, limit: int) -> Script[Page | None]:
        rows = yield PAGE, (key_hash, limit, offset)
        return Page(*rows[0]) if rows else None

and its caller hands the whole script to the driver in one call, which checks out a
connection, runs every statement on the raw connection, and gives it back::

    found = await drivers.run(listing.page(key_hash, 0, 10))            # READ
    await drivers.run(accounts.mark_used(uses), WRITE)                  # a transaction
    await drivers.run(addresses.count_mail(drivers.dialect, ...), ONE_WRITE)

- ``READ``: no transaction, each statement its own snapshot (PostgreSQL's READ
  COMMITTED gives no more inside one); ``bulk=True`` runs a SQLite script on a worker
  thread, for statements that take milliseconds (a chunk of the listing).
- ``WRITE``: one transaction, committed when the script returns, rolled back when it or
  a statement raises. On SQLite it queues behind this process's writers
  (``sqlite_inline.Connection.write_transaction``), so the event loop never waits for
  another process's lock; on PostgreSQL it is BEGIN ... COMMIT.
- ``ONE_WRITE``: a script of one statement that is atomic alone: on PostgreSQL no BEGIN
  and COMMIT (two round trips), and a second statement is refused; on SQLite a write
  transaction, as ``WRITE``.

A script is plain Python between its statements: it awaits nothing, so a transaction
never waits on anything but the database. A failed statement ends it (the error is
raised to the caller of ``run``, after the rollback). ``yield from`` composes scripts of
several store modules into one transaction. ``run_on`` runs a script inside a
transaction its caller already holds (a SQLAlchemy connection, or a ``Driver``).
A script reads ``drivers.dialect`` through its caller when its statements differ by
more than their text.

The older per-statement face, ``async with drivers() as driver`` with ``driver.rows``,
``writing`` and ``single_write``, still serves the code not yet written as scripts.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Literal, Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.util import greenlet_spawn

from maskmail.core.errors import MaskmailError
from maskmail.store.engine import is_outage, is_refusal, unavailable, unavailable_on_outage
from maskmail.store.sqlite_inline import Connection as InlineSqlite
from maskmail.store.statements import Row, Script, Statement

T = TypeVar("T")
Mode = Literal["read", "write", "one_write"]
READ: Mode = "read"
WRITE: Mode = "write"
ONE_WRITE: Mode = "one_write"


def _run_sqlite(conn: sqlite3.Connection, script: Script[T]) -> T:
    """Every statement of ``script`` on ``conn``, inline; the caller holds any transaction."""
    try:
        statement, args = next(script)
        while True:
            rows = conn.execute(statement.sqlite or statement.text("sqlite"), args).fetchall()
            statement, args = script.send(rows)
    except StopIteration as done:
        result: T = done.value
        return result
    finally:
        script.close()


async def _run_pg(conn: Any, script: Script[T], *, one: bool = False) -> T:
    """Every statement of ``script`` on an asyncpg connection; ``one``: a second is refused."""
    try:
        statement, args = next(script)
        while True:
            rows = await conn.fetch(statement.postgresql or statement.text("postgresql"), *args)
            statement, args = script.send(rows)
            if one:
                raise RuntimeError("a ONE_WRITE script runs one statement on PostgreSQL")
    except StopIteration as done:
        result: T = done.value
        return result
    finally:
        script.close()


async def _run_sqlite_bulk(conn: sqlite3.Connection, script: Script[T]) -> T:
    """``_run_sqlite`` on a worker thread: sqlite3 lets go of the GIL while SQLite works,
    so a statement of milliseconds runs beside the event loop instead of stopping it.
    The connection is this caller's alone until it goes back to the pool, and it goes
    back only after the script finished, even when the caller is cancelled."""
    work = asyncio.get_running_loop().run_in_executor(None, _run_sqlite, conn, script)
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        await asyncio.wait([work])
        raise


async def run_on(conn: AsyncConnection | Driver, script: Script[T]) -> T:
    """``script``'s statements inside the transaction the caller holds on ``conn``."""
    driver = await as_driver(conn)
    try:
        statement, args = next(script)
        while True:
            statement, args = script.send(await driver.rows(statement, *args))
    except StopIteration as done:
        result: T = done.value
        return result
    finally:
        script.close()


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

    async def bulk_rows(self, statement: Statement, *args: Any) -> Sequence[Row]:
        """On a worker thread (``_run_sqlite_bulk``)."""
        return await _run_sqlite_bulk(self._conn, _one(statement, args))

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


def _one(statement: Statement, args: Sequence[Any]) -> Script[Sequence[Row]]:
    rows = yield statement, args
    return rows


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


Taken = tuple[float, Any, Any]
# How long a use waits for a kept connection to come back (``hand_over``) when the
# engine's pool does not say how long its own checkouts wait.
HAND_OVER_WAIT = 30.0


class DriverPool:
    """Driver connections from the engine's pool: ``run`` a script on one, or hold one
    for an ``async with``.

    With ``keep``, up to that many stay checked out between uses (docs/architecture.md,
    the fast path), each for at most ``KEEP_SECONDS`` from leaving SQLAlchemy's pool and
    only when outside any transaction; then it goes back through the pool as usual, so
    its recycling and reset still happen. An outage drops every kept one. ``close``
    hands them back: its owner calls it before disposing of the engine.

    With ``hand_over`` as well, a READ script that finds all ``keep`` of them busy waits
    for one to be given back and takes it straight from the user before it, instead of
    checking out one more through SQLAlchemy's pool: a read keeps its connection for the
    database's CPU alone, and under load a checkout and a return cost more than the
    wait. Writes, which also wait for the database's commit, take more from the pool, so
    that commits overlap, up to all but a quarter of it (at least one), which stays for
    SQLAlchemy's own users; past that they wait too. Every use waits in one line, served
    in turn: a connection given back goes to the longest waiting, never to a newcomer,
    so under load no request waits much longer than another.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        keep: int = 0,
        *,
        hand_over: bool = False,
        wait: float | None = None,
    ) -> None:
        self._engine = engine
        self.dialect: str = engine.dialect.name
        pool = engine.sync_engine.pool
        size = getattr(pool, "size", lambda: 0)()
        # A use waits for a connection as long as a checkout from the pool would.
        self._wait_limit: float = (
            wait if wait is not None else getattr(pool, "timeout", lambda: HAND_OVER_WAIT)()
        )
        # Never more than half the pool, so SQLAlchemy's own users always find one.
        self._keep = min(keep, size // 2)
        self._hand_over = hand_over and self._keep > 0
        self._writers = max(self._keep, size - max(1, size // 4))
        # (when it left SQLAlchemy's pool, the pool's record, the driver's connection)
        self._kept: list[Taken] = []
        # Connections of this pool out of SQLAlchemy's, kept or in use; and, with
        # ``hand_over``, the uses waiting for one: each is given a connection, or None
        # for a place to check one out.
        self._out = 0
        self._waiting: deque[asyncio.Future[Taken | None]] = deque()

    async def _take(self, read: bool) -> Taken:
        if self._kept:
            return self._kept.pop()
        if self._hand_over and self._out >= (self._keep if read else self._writers):
            handed = await self._wait()
            if handed is not None:
                return handed
        else:
            self._out += 1
        try:
            pooled = await self._engine.raw_connection()
        except BaseException:
            self._release()
            raise
        return time.monotonic(), pooled, pooled.driver_connection

    async def _wait(self) -> Taken | None:
        """A connection given back by another use, or None: a place to check one out."""
        waiter: asyncio.Future[Taken | None] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            async with asyncio.timeout(self._wait_limit):
                return await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                # Handed one just as this use gave up: given back as if used.
                handed = waiter.result()
                if handed is None:
                    self._release()
                else:
                    await self._give_back(handed)
            else:
                waiter.cancel()
            raise

    def _hand(self, given: Taken | None) -> bool:
        """Give ``given`` to the longest waiting use; False when none waits."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(given)
                return True
        return False

    def _release(self) -> None:
        """One connection of this pool went back to SQLAlchemy's, or never came out."""
        if not self._hand(None):
            self._out -= 1

    def _idle(self, conn: Any) -> bool:
        if self.dialect == "sqlite":
            return not conn.sqlite.in_transaction
        return not conn.is_in_transaction() and not conn.is_closed()

    async def _give_back(self, taken: Taken) -> None:
        since, pooled, conn = taken
        if time.monotonic() - since < KEEP_SECONDS and self._idle(conn):
            if self._hand(taken):
                return
            if len(self._kept) < self._keep:
                self._kept.append(taken)
                return
        self._release()
        # Returning it may roll back through the async adapter: needs a greenlet.
        await greenlet_spawn(pooled.close)

    async def close(self) -> None:
        while self._kept:
            self._release()
            await greenlet_spawn(self._kept.pop()[1].close)

    async def _drop_kept(self) -> None:
        while self._kept:
            self._release()
            await greenlet_spawn(self._kept.pop()[1].invalidate)

    async def _failed(self, taken: Taken, exc: BaseException) -> None:
        """SQLAlchemy never saw the driver's error, so it cannot tell a connection that
        broke mid-statement (a database outage, a cancelled request) from a good one. A
        refused statement or a refused request leaves it usable (any transaction was
        rolled back); anything else, and it is never handed out again. After an outage
        the others in the pool are dead too; a new pool replaces them, as SQLAlchemy does
        when it sees a disconnect itself."""
        if isinstance(exc, MaskmailError) or is_refusal(exc):
            await self._give_back(taken)
            return
        pooled = taken[1]
        if isinstance(exc, TimeoutError):
            # Past MASKMAIL_DB_TIMEOUT the server is not answering: drop the connection at
            # once rather than wait for it to say goodbye.
            _terminate(pooled)
        self._release()
        await greenlet_spawn(pooled.invalidate)
        if is_outage(exc):
            await self._drop_kept()
            await self._engine.dispose(close=False)

    async def run(self, script: Script[T], mode: Mode = READ, *, bulk: bool = False) -> T:
        """``script`` on a connection of the pool, as one transaction of ``mode`` (the
        module's docstring): checkout, statements, commit and give-back in one call."""
        # The outage mapping of unavailable_on_outage, written out: this is every hot
        # request's path, and a context manager per call cost a visible share of it.
        try:
            taken = await self._take(read=mode == READ)
            conn = taken[2]
            try:
                if self.dialect == "sqlite":
                    if mode == READ:
                        if bulk:
                            result = await _run_sqlite_bulk(conn.sqlite, script)
                        else:
                            result = _run_sqlite(conn.sqlite, script)
                    else:
                        async with conn.write_transaction() as raw:
                            result = _run_sqlite(raw, script)
                else:
                    async with execute_mutex(taken[1]):
                        if mode == WRITE:
                            async with conn.transaction():
                                result = await _run_pg(conn, script)
                        else:
                            result = await _run_pg(conn, script, one=mode == ONE_WRITE)
            except BaseException as exc:
                await self._failed(taken, exc)
                raise
            await self._give_back(taken)
            return result
        except Exception as exc:
            found = unavailable(exc)
            if found is exc:
                raise
            raise found from exc

    @asynccontextmanager
    async def __call__(self) -> AsyncIterator[Driver]:
        with unavailable_on_outage():
            taken = await self._take(read=False)
            try:
                if self.dialect == "sqlite":
                    yield SqliteDriver(taken[2], managed=False)
                else:
                    async with execute_mutex(taken[1]):
                        yield PgDriver(taken[2], managed=False)
            except BaseException as exc:
                await self._failed(taken, exc)
                raise
            await self._give_back(taken)
