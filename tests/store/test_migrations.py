"""`db upgrade` on an empty and an up-to-date database; the schema matches the tables."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection

from maskmail.store.engine import create_engine
from maskmail.store.migrate import head_revision, upgrade
from maskmail.store.tables import metadata
from tests.support import BACKENDS, fresh_database, run_cli


def _diff(sync_conn: Connection) -> list[object]:
    context = MigrationContext.configure(sync_conn, opts={"compare_type": True})
    return list(compare_metadata(context, metadata))


def _revision(sync_conn: Connection) -> str | None:
    return MigrationContext.configure(sync_conn).get_current_revision()


async def _inspect(url: str) -> tuple[str | None, list[object]]:
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(_revision), await conn.run_sync(_diff)
    finally:
        await engine.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_upgrade_twice_through_the_cli(backend: str, tmp_path: Path) -> None:
    with fresh_database(backend, tmp_path) as url:
        assert asyncio.run(_inspect(url))[0] is None
        for _ in range(2):
            result = run_cli({"MASKMAIL_DATABASE_URL": url}, "db", "upgrade")
            assert result.returncode == 0, result.stderr
        revision, diff = asyncio.run(_inspect(url))
        assert revision == head_revision()
        assert diff == []


def test_upgrade_is_idempotent_in_process(database_url: str) -> None:
    upgrade(database_url)
    upgrade(database_url)
