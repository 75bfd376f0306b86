"""Engine set-up: the SQLite recipe that keeps concurrent writers correct, and PostgreSQL."""

from __future__ import annotations

import sqlite3
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
# What the drivers raise, used directly (store/raw.py), when the database is not there;
# asyncpg's server errors are told apart by SQLSTATE, as through SQLAlchemy (_is_outage).
# asyncpg raises InternalClientError ("another operation is in progress") when a statement
# is sent on a connection the server has just terminated (it is still consuming the
# server's goodbye): during a shutdown that is the outage, seen first.
_DRIVER_OUTAGES = (sqlite3.OperationalError, asyncpg.InterfaceError, asyncpg.InternalClientError)


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


# Every statement is prepared once per connection (asyncpg), and its generic plan is kept.
# By default PostgreSQL planned a page anew on each execution, because the generic plan's
# estimate for an unknown LIMIT looked dearer than a custom plan: planning doubled the
# backend's CPU per page (docs/benchmarks.md). Our statements look rows up by keys and
# owners, where the generic plan is the custom one.
PG_SETTINGS = {"plan_cache_mode": "force_generic_plan"}


def create_engine(url: str, pool_size: int = 10) -> AsyncEngine:
    """An async engine; for SQLite, with WAL, a busy timeout and ``BEGIN IMMEDIATE``."""
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
        connect_args={"server_settings": PG_SETTINGS},
    )


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
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        readonly = conn.get_execution_options().get(READONLY, False)
        conn.exec_driver_sql("BEGIN" if readonly else "BEGIN IMMEDIATE")


# SQLSTATEs of a server that is going away or not ready yet, rather than of a bad query:
# connection exceptions (class 08), shutting down or starting up (57P01-57P03), and full.
OUTAGE_SQLSTATE_CLASSES = ("08",)
OUTAGE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300"})


def _is_outage(exc: DBAPIError) -> bool:
    """A lost connection, or PostgreSQL refusing connections while it stops or starts.

    asyncpg raises the latter as server errors, at connect time, so SQLAlchemy neither
    wraps them as OperationalError nor marks a connection invalidated.
    """
    cause = getattr(exc.orig, "__cause__", None)
    return (
        exc.connection_invalidated
        or _outage_state(exc.orig)
        or isinstance(cause, asyncpg.InternalClientError)
    )


def _outage_state(error: object) -> bool:
    sqlstate = getattr(error, "sqlstate", None)
    if not isinstance(sqlstate, str):
        return False
    return sqlstate in OUTAGE_SQLSTATES or sqlstate.startswith(OUTAGE_SQLSTATE_CLASSES)


def is_driver_outage(exc: BaseException) -> bool:
    """True when an error the driver raised directly means the database went away."""
    if isinstance(exc, (ConnectionError, TimeoutError, OSError, *_DRIVER_OUTAGES)):
        return True
    return isinstance(exc, asyncpg.PostgresError) and _outage_state(exc)


@contextmanager
def unavailable_on_outage() -> Iterator[None]:
    """Turn "the database is not there right now" into StoreUnavailable."""
    try:
        yield
    except (OperationalError, PoolTimeout, ConnectionError, TimeoutError, *_DRIVER_OUTAGES) as exc:
        raise StoreUnavailable("the database is unavailable; try again shortly") from exc
    except DBAPIError as exc:
        if _is_outage(exc):
            raise StoreUnavailable("the database is unavailable; try again shortly") from exc
        raise
    except asyncpg.PostgresError as exc:
        if _outage_state(exc):
            raise StoreUnavailable("the database is unavailable; try again shortly") from exc
        raise
    except OSError as exc:
        raise StoreUnavailable("the database is unavailable; try again shortly") from exc
    except Exception as exc:
        # A checkout through the pool alone (the raw path) gets the adapter's own error
        # class, with the driver's error as its cause.
        if exc.__cause__ is not None and is_driver_outage(exc.__cause__):
            raise StoreUnavailable("the database is unavailable; try again shortly") from exc
        raise


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
