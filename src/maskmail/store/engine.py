"""Engine set-up: the SQLite recipe that keeps concurrent writers correct, and PostgreSQL."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy import event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from maskmail.core.errors import StoreUnavailable
from maskmail.store import sqlite_inline

READONLY = "maskmail_readonly"
BUSY_TIMEOUT_MS = 10_000


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def shown(url: str) -> str:
    """The URL as start-up logs it: which database is in use, without its password."""
    return make_url(url).render_as_string(hide_password=True)


# Every statement is prepared once per connection (asyncpg), and its generic plan is kept.
# By default PostgreSQL planned a page anew on each execution, because the generic plan's
# estimate for an unknown LIMIT looked dearer than a custom plan, so the backend spent
# as much on planning as on the page (docs/benchmarks.md). Our statements look rows up by
# keys and owners, where the generic plan is the custom one.
PG_SETTINGS = {"plan_cache_mode": "force_generic_plan"}


def create_engine(url: str, pool_size: int = 10, timeout: float | None = None) -> AsyncEngine:
    """An async engine; for SQLite, with WAL, a busy timeout and ``BEGIN IMMEDIATE``.

    ``timeout`` (seconds) bounds each PostgreSQL connection attempt and statement, on
    SQLAlchemy's path and the driver's alike (asyncpg applies ``command_timeout`` to
    every call without its own): a server that stops answering without closing the
    connection is then an outage, not a hang. None leaves asyncpg's defaults (no
    statement limit), for migrations that may run long.
    """
    if is_sqlite(url):
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(
            url,
            pool_size=pool_size,
            max_overflow=0,
            async_creator=sqlite_inline.connector(database or ":memory:", BUSY_TIMEOUT_MS),
        )
        _install_sqlite_recipe(engine)
        return engine
    # No overflow: under load, overflow connections were closed on return and opened
    # again at once, and each PostgreSQL connection costs a backend process and a TLS
    # attempt; requests beyond the pool wait for a connection instead (docs/benchmarks.md).
    return create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=0,
        pool_timeout=10,
        pool_recycle=3600,
        connect_args=_pg_connect_args(url, timeout),
    )


def _pg_connect_args(url: str, timeout: float | None) -> dict[str, Any]:
    """Prepared statements, unless the URL turns SQLAlchemy's cache of them off
    (``?prepared_statement_cache_size=0``), as behind PgBouncer in transaction pooling.

    There a client's next transaction may run on another server connection, where its
    cached statements do not exist, and two clients' statement names may meet on one.
    So asyncpg's cache goes too (it then sends unnamed statements), each statement
    SQLAlchemy prepares gets a unique name, and ``plan_cache_mode``, which only matters
    for reused statements (and which PgBouncer refuses as a startup parameter), is not sent.
    """
    deadlines = {} if timeout is None else {"timeout": timeout, "command_timeout": timeout}
    if make_url(url).query.get("prepared_statement_cache_size") == "0":
        return {
            "statement_cache_size": 0,
            "prepared_statement_name_func": _unique_name,
            **deadlines,
        }
    return {"server_settings": PG_SETTINGS, **deadlines}


def _unique_name() -> str:
    return f"__maskmail_{uuid.uuid4().hex}__"


def _install_sqlite_recipe(engine: AsyncEngine) -> None:
    """Take transaction control away from the driver.

    Python's sqlite3 begins transactions lazily and as DEFERRED, so two writers can both
    read a value and then one of them fails (or worse, a lost update goes unnoticed).
    Writers here take the write lock at BEGIN and wait for it up to the busy timeout.
    Read-only transactions stay DEFERRED so that readers never queue behind writers (WAL).
    """

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        if dbapi_connection.isolation_level is not None:
            dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        # Checkpoints run in the background (store/sqlite_inline.py); this only bounds the log.
        cursor.execute(f"PRAGMA wal_autocheckpoint={sqlite_inline.AUTOCHECKPOINT_BACKSTOP_PAGES}")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        readonly = conn.get_execution_options().get(READONLY, False)
        conn.exec_driver_sql("BEGIN" if readonly else "BEGIN IMMEDIATE")


# SQLSTATEs of a server that is going away or not ready yet, rather than of a bad query:
# connection exceptions (class 08), shutting down or starting up (57P01-57P03), and full.
OUTAGE_SQLSTATE_CLASSES = ("08",)
OUTAGE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300"})
# SQLite's primary result codes for a database that cannot be used right now: another
# writer holds it past the busy timeout, a table lock, the disk, or the file itself. Any
# other code (a missing table, a constraint, a read-only file) is a mistake, not an outage.
OUTAGE_SQLITE_CODES = frozenset(
    {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN}
)
# Errors that only a connection (or the way to it) going away raises. asyncpg raises
# InternalClientError ("another operation is in progress") when a statement is sent on a
# connection the server has just terminated: during a shutdown that is the outage, seen first.
_CONNECTION_LOST = (
    ConnectionError,
    TimeoutError,
    OSError,
    PoolTimeout,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
)


def is_outage(exc: BaseException) -> bool:
    """True when ``exc`` means "the database is not there right now, retry", and False
    for a statement the database refused (a bug, or bad input), whichever layer raised it:
    SQLAlchemy, the driver directly (store/driver.py), or the pool's adapter around it."""
    if isinstance(exc, DBAPIError):
        return (
            exc.connection_invalidated
            or (exc.orig is not None and _driver_outage(exc.orig))
            # SQLAlchemy's own OperationalError without a driver error behind it.
            or (isinstance(exc, OperationalError) and not isinstance(exc.orig, _DRIVER_ERRORS))
            or isinstance(getattr(exc.orig, "__cause__", None), asyncpg.InternalClientError)
        )
    if _driver_outage(exc):
        return True
    # A checkout through the pool alone gets the adapter's own error class, with the
    # driver's error as its cause.
    return exc.__cause__ is not None and _driver_outage(exc.__cause__)


_DRIVER_ERRORS = (sqlite3.Error, asyncpg.PostgresError)


def _driver_outage(error: BaseException) -> bool:
    if isinstance(error, sqlite3.Error):
        code = getattr(error, "sqlite_errorcode", None)
        return isinstance(code, int) and code & 0xFF in OUTAGE_SQLITE_CODES
    if isinstance(error, _CONNECTION_LOST):
        return True
    sqlstate = getattr(error, "sqlstate", None)
    if not isinstance(sqlstate, str):
        return False
    return sqlstate in OUTAGE_SQLSTATES or sqlstate.startswith(OUTAGE_SQLSTATE_CLASSES)


def is_refusal(exc: BaseException) -> bool:
    """A statement the database answered with an error, on a connection still usable."""
    return isinstance(exc, _DRIVER_ERRORS) and not is_outage(exc)


def unavailable(exc: Exception) -> Exception:
    """StoreUnavailable when ``exc`` means "the database is not there right now", else
    ``exc`` itself: for the caller to raise, from ``exc``."""
    if is_outage(exc):
        return StoreUnavailable("the database is unavailable; try again shortly")
    return exc


@contextmanager
def unavailable_on_outage() -> Iterator[None]:
    """Turn "the database is not there right now" into StoreUnavailable."""
    try:
        yield
    except Exception as exc:
        found = unavailable(exc)
        if found is exc:
            raise
        raise found from exc


@asynccontextmanager
async def transaction(
    engine: AsyncEngine, *, readonly: bool = False
) -> AsyncIterator[AsyncConnection]:
    """One transaction: committed when the block succeeds, rolled back when it raises.

    A read-only block on PostgreSQL runs without BEGIN and COMMIT: at READ COMMITTED each
    statement takes its own snapshot inside a transaction too, so it would buy nothing but
    two round trips per request. On SQLite it is a deferred transaction (one snapshot).
    """
    with unavailable_on_outage():
        async with engine.connect() as conn:
            if readonly:
                options: dict[str, object] = {READONLY: True}
                if engine.dialect.name == "postgresql":
                    options["isolation_level"] = "AUTOCOMMIT"
                await conn.execution_options(**options)
            async with conn.begin():
                yield conn
