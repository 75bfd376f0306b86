"""Migration 0008 (relay subdomains): upgrading a database with users, keys and addresses
from 0005 loses nothing, and the new columns start switched off."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from maskmail.store.engine import create_engine
from maskmail.store.migrate import alembic_config, upgrade
from maskmail.store.tables import (
    addresses,
    api_keys,
    bounces,
    daily_activity,
    reverse_aliases,
    subdomains,
    tombstones,
    users,
)
from tests.support import BACKENDS, fresh_database, kept_address_count

Snapshot = dict[str, list[tuple[object, ...]]]


async def _seed(url: str) -> None:
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.begin() as conn:
            for user_id in (1, 2):
                await conn.exec_driver_sql(
                    "INSERT INTO users (id, email, email_key, created_time) "
                    f"VALUES ({user_id}, 'U{user_id}@Example.com', 'u{user_id}@example.com', 7)"
                )
                await conn.exec_driver_sql(
                    "INSERT INTO api_keys (user_id, key_hash, created_time, revoked_time) "
                    f"VALUES ({user_id}, '{'k' * 63}{user_id}', 8, NULL)"
                )
                for i in range(3):
                    await conn.exec_driver_sql(
                        "INSERT INTO addresses (user_id, address, domain, description, "
                        "created_time, num_forwarded) "
                        f"VALUES ({user_id}, 'a{user_id}x{i}', 'relay.test', 'd{i}', 9, {i})"
                    )
            await conn.exec_driver_sql(
                f"INSERT INTO tombstones (hash, created_time) VALUES ('{'t' * 64}', 1)"
            )
            # Rows that refer to addresses: SQLite's rebuild of that table must keep them.
            await conn.exec_driver_sql(
                "INSERT INTO reverse_aliases (address_id, sender, alias, domain, created_time) "
                "VALUES (2, 'shop@example.net', 'ra1', 'relay.test', 10)"
            )
            await conn.exec_driver_sql(
                "INSERT INTO bounces (address_id, received_time, kind, status) "
                "VALUES (3, 11, 'hard', '5.1.1')"
            )
    finally:
        await engine.dispose()


async def _snapshot(url: str) -> Snapshot:
    engine = create_engine(url, pool_size=1)
    tables = {
        "users": select(users.c.id, users.c.email, users.c.email_key).order_by(users.c.id),
        "api_keys": select(api_keys.c.user_id, api_keys.c.key_hash).order_by(api_keys.c.id),
        "addresses": select(
            addresses.c.id,
            addresses.c.user_id,
            addresses.c.address,
            addresses.c.subdomain,
            addresses.c.description,
            addresses.c.num_forwarded,
        ).order_by(addresses.c.id),
        "tombstones": select(tombstones.c.hash).order_by(tombstones.c.hash),
        "reverse_aliases": select(reverse_aliases.c.address_id, reverse_aliases.c.alias),
        "bounces": select(bounces.c.address_id, bounces.c.status),
        "daily_activity": select(daily_activity.c.address_id, daily_activity.c.num_forwarded),
    }
    try:
        async with engine.connect() as conn:
            found = {name: [tuple(r) for r in await conn.execute(q)] for name, q in tables.items()}
            found["counts"] = [(await kept_address_count(conn, u[0]),) for u in found["users"]]
            return found
    finally:
        await engine.dispose()


async def _new_state(url: str) -> tuple[list[bool], int]:
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.connect() as conn:
            use = [bool(v) for v in await conn.scalars(select(users.c.use_relay_subdomain))]
            return use, len((await conn.execute(select(subdomains.c.id))).all())
    finally:
        await engine.dispose()


async def _one_local_part_at_two_hosts(url: str) -> None:
    """The unique key is per host now; still unique per host, and the count triggers
    survived the rebuild."""
    engine = create_engine(url, pool_size=1)
    insert = (
        "INSERT INTO addresses (user_id, address, domain, subdomain, created_time) "
        "VALUES (1, 'a1x0', 'relay.test', 'sub', 9)"
    )
    try:
        async with engine.begin() as conn:
            await conn.exec_driver_sql(insert)
            count = await kept_address_count(conn, 1)
            assert count == 4
        with pytest.raises(IntegrityError):
            async with engine.begin() as conn:
                await conn.exec_driver_sql(insert)
        async with engine.begin() as conn:
            await conn.exec_driver_sql("DELETE FROM addresses WHERE subdomain = 'sub'")
    finally:
        await engine.dispose()


async def _count_a_day(url: str) -> None:
    """A row of the dashboard's daily counts (0006), which refers to an address."""
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.begin() as conn:
            address_id = await conn.scalar(select(func.min(addresses.c.id)))
            await conn.execute(
                daily_activity.insert().values(address_id=address_id, day=1, num_forwarded=7)
            )
    finally:
        await engine.dispose()


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_upgrade_from_0005_keeps_users_keys_and_addresses(backend: str, tmp_path: Path) -> None:
    with fresh_database(backend, tmp_path) as url:
        command.upgrade(alembic_config(url), "0005")
        asyncio.run(_seed(url))
        command.upgrade(alembic_config(url), "0006")
        asyncio.run(_count_a_day(url))
        before = asyncio.run(_snapshot(url))
        assert len(before["daily_activity"]) == 1
        upgrade(url)
        assert asyncio.run(_snapshot(url)) == before
        assert len(before["addresses"]) == 6 and len(before["api_keys"]) == 2
        assert len(before["reverse_aliases"]) == 1 and len(before["bounces"]) == 1
        assert before["counts"][0] == (3,)
        assert asyncio.run(_new_state(url)) == ([False, False], 0)
        asyncio.run(_one_local_part_at_two_hosts(url))
        # Down to the revision before and up again: still nothing lost.
        command.downgrade(alembic_config(url), "0006")
        upgrade(url)
        assert asyncio.run(_snapshot(url)) == before
