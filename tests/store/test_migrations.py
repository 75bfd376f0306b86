"""`db upgrade` on an empty and an up-to-date database; the schema matches the tables."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, select

from maskmail.store.engine import create_engine
from maskmail.store.migrate import alembic_config, head_revision, upgrade
from maskmail.store.tables import metadata, users
from tests.support import BACKENDS, fresh_database, kept_address_count, run_cli


def _diff(sync_conn: Connection) -> list[object]:
    context = MigrationContext.configure(sync_conn, opts={"compare_type": True})
    with warnings.catch_warnings():
        # Alembic cannot compare expression indexes (0008's unique key per host).
        warnings.filterwarnings("ignore", ".*expression-based index")
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


@pytest.mark.slow
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


async def _seed_before_counts(url: str) -> None:
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.begin() as conn:
            for user_id, n in ((1, 3), (2, 0), (3, 1)):
                await conn.exec_driver_sql(
                    "INSERT INTO users (id, email, email_key, created_time) "
                    f"VALUES ({user_id}, 'u{user_id}@example.com', 'u{user_id}@example.com', 1)"
                )
                for i in range(n):
                    await conn.exec_driver_sql(
                        "INSERT INTO addresses (user_id, address, domain, created_time) "
                        f"VALUES ({user_id}, 'a{user_id}x{i}', 'relay.test', 1)"
                    )
    finally:
        await engine.dispose()


async def _counts(url: str) -> list[tuple[int, int]]:
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.connect() as conn:
            ids = list(await conn.scalars(select(users.c.id).order_by(users.c.id)))
            return [(int(i), await kept_address_count(conn, i)) for i in ids]
    finally:
        await engine.dispose()


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_address_counts_are_filled_in_for_existing_users(backend: str, tmp_path: Path) -> None:
    with fresh_database(backend, tmp_path) as url:
        command.upgrade(alembic_config(url), "0004")
        asyncio.run(_seed_before_counts(url))
        upgrade(url)
        assert asyncio.run(_counts(url)) == [(1, 3), (2, 0), (3, 1)]
        # Down and up again: the addresses survive the downgrade and are counted anew.
        command.downgrade(alembic_config(url), "0003")
        upgrade(url)
        assert asyncio.run(_counts(url)) == [(1, 3), (2, 0), (3, 1)]


async def _add_addresses(url: str, owners: list[int]) -> None:
    """One address per entry of ``owners``, each in its own transaction and, on
    PostgreSQL, from more than one connection (so in more than one slot); then the
    first of them is deleted."""
    engine = create_engine(url, pool_size=3)
    try:

        async def add(n: int, owner: int) -> None:
            async with engine.begin() as conn:
                await conn.exec_driver_sql(
                    "INSERT INTO addresses (user_id, address, domain, created_time) "
                    f"VALUES ({owner}, 'slot{n}x{owner}', 'relay.test', 1)"
                )

        await asyncio.gather(*(add(n, owner) for n, owner in enumerate(owners)))
        async with engine.begin() as conn:
            await conn.exec_driver_sql(f"DELETE FROM addresses WHERE address = 'slot0x{owners[0]}'")
    finally:
        await engine.dispose()


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_address_counts_move_to_their_slots_and_back(backend: str, tmp_path: Path) -> None:
    with fresh_database(backend, tmp_path) as url:
        command.upgrade(alembic_config(url), "0010")
        asyncio.run(_seed_before_counts(url))
        upgrade(url)
        assert asyncio.run(_counts(url)) == [(1, 3), (2, 0), (3, 1)]
        # Counted in the slots, one removal among them.
        asyncio.run(_add_addresses(url, [1, 1, 2, 1, 2, 2, 1]))
        assert asyncio.run(_counts(url)) == [(1, 6), (2, 3), (3, 1)]
        # Back in users.address_count, and counted there by the old triggers again.
        command.downgrade(alembic_config(url), "0010")
        assert asyncio.run(_counts(url)) == [(1, 6), (2, 3), (3, 1)]
        asyncio.run(_add_addresses(url, [3, 3]))
        assert asyncio.run(_counts(url)) == [(1, 6), (2, 3), (3, 2)]
        upgrade(url)
        assert asyncio.run(_counts(url)) == [(1, 6), (2, 3), (3, 2)]
