"""The two places maskmail relies on a library's private shape fail here first when a
new release changes it (pyproject.toml bounds those releases too)."""

from __future__ import annotations

import asyncio
import inspect
import re
import sqlite3

import pytest
from sqlalchemy.connectors import asyncio as async_adapter
from sqlalchemy.dialects.postgresql import asyncpg as pg_adapter
from sqlalchemy.dialects.sqlite import aiosqlite as sqlite_adapter
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.store import sqlite_inline
from maskmail.store.driver import execute_mutex

pytestmark = pytest.mark.anyio
# What SQLAlchemy's aiosqlite adapter may use of the driver connection. ``_conn`` and
# ``_tx`` serve only its isolation_level setter, which never runs: our connections are
# made in autocommit mode (isolation_level None) and the engine never sets it.
NEVER_CALLED = {"_conn", "_tx"}
# What the cursor adapter (shared by SQLAlchemy's async dialects) may use of the driver's
# cursor. ``nextset`` and ``setinputsizes`` serve only the DBAPI methods of the same name,
# which the SQLite dialect never calls.
NEVER_CALLED_ON_CURSOR = {"nextset", "setinputsizes"}
ADAPTERS = (sqlite_adapter, async_adapter)


def _used(pattern: str) -> set[str]:
    return {name for module in ADAPTERS for name in re.findall(pattern, inspect.getsource(module))}


def test_sqlite_inline_has_all_the_aiosqlite_adapter_uses() -> None:
    used = _used(r"self\._connection\.(\w+)")
    assert used, "the adapter no longer reaches its driver connection as self._connection"
    missing = {name for name in used - NEVER_CALLED if not hasattr(sqlite_inline.Connection, name)}
    assert missing == set()


def test_sqlite_inline_cursor_has_all_the_cursor_adapter_uses() -> None:
    used = _used(r"self\._cursor\.(\w+)")
    assert {"execute", "fetchall", "description"} <= used, "the adapter's cursor moved"
    conn = sqlite3.connect(":memory:")
    try:
        cursor = sqlite_inline.Connection(conn, asyncio.Lock(), 0).cursor()
        missing = {name for name in used - NEVER_CALLED_ON_CURSOR if not hasattr(cursor, name)}
    finally:
        conn.close()
    assert missing == set()


async def test_the_asyncpg_adapter_serialises_on_execute_mutex(
    engine: AsyncEngine, backend: str
) -> None:
    assert "async with adapt_connection._execute_mutex" in inspect.getsource(pg_adapter)
    if backend != "postgres":
        return
    pooled = await engine.raw_connection()
    try:
        assert isinstance(execute_mutex(pooled), asyncio.Lock)
    finally:
        pooled.close()
