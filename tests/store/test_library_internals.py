"""The two places maskmail relies on a library's private shape fail here first when a
new release changes it (pyproject.toml bounds those releases too)."""

from __future__ import annotations

import asyncio
import inspect
import re

import pytest
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


def test_sqlite_inline_has_all_the_aiosqlite_adapter_uses() -> None:
    source = inspect.getsource(sqlite_adapter)
    used = set(re.findall(r"self\._connection\.(\w+)", source))
    assert used, "the adapter no longer reaches its driver connection as self._connection"
    missing = {name for name in used - NEVER_CALLED if not hasattr(sqlite_inline.Connection, name)}
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
