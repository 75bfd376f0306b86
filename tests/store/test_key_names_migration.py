"""Migration 0019: keys made before it keep working without a name; going down drops the
names and keeps the keys (and, on SQLite, the table's AUTOINCREMENT from 0013)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import text

from maskmail.store.engine import create_engine
from maskmail.store.migrate import alembic_config, upgrade
from tests.support import BACKENDS, fresh_database


async def _run(url: str, sql: str) -> list[tuple[object, ...]]:
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.begin() as conn:
            result = await conn.execute(text(sql))
            return [tuple(row) for row in result] if result.returns_rows else []
    finally:
        await engine.dispose()


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_old_keys_have_no_name_and_going_down_keeps_the_keys(backend: str, tmp_path: Path) -> None:
    with fresh_database(backend, tmp_path) as url:
        command.upgrade(alembic_config(url), "0014")
        asyncio.run(_run(url, "INSERT INTO users (email, email_key, created_time) "
                              "VALUES ('a@example.com', 'a@example.com', 1)"))  # fmt: skip
        asyncio.run(_run(url, "INSERT INTO api_keys (user_id, key_hash, created_time) "
                              f"VALUES (1, '{'a' * 64}', 1)"))  # fmt: skip
        upgrade(url)
        assert asyncio.run(_run(url, "SELECT key_hash, name FROM api_keys")) == [("a" * 64, None)]
        command.downgrade(alembic_config(url), "0014")
        assert asyncio.run(_run(url, "SELECT key_hash FROM api_keys")) == [("a" * 64,)]
        if backend == "sqlite":
            [(create,)] = asyncio.run(
                _run(url, "SELECT sql FROM sqlite_master WHERE name = 'api_keys'")
            )
            assert "AUTOINCREMENT" in str(create) and "name" not in str(create)
