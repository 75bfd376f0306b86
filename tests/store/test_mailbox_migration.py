"""Migration 0007 on a database holding users, keys and addresses from 0005: nothing is
lost, and each user's address becomes their mailbox one, verified and the default."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import func, select

from maskmail.store import mailboxes
from maskmail.store.engine import create_engine
from maskmail.store.migrate import alembic_config, upgrade
from maskmail.store.tables import address_mailboxes, addresses, api_keys, users
from tests.support import BACKENDS, fresh_database, kept_address_count


async def _seed(url: str) -> None:
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.begin() as conn:
            for user_id in (1, 2):
                await conn.exec_driver_sql(
                    "INSERT INTO users (id, email, email_key, created_time) VALUES "
                    f"({user_id}, 'U{user_id}@Example.com', 'u{user_id}@example.com', 7)"
                )
                await conn.exec_driver_sql(
                    "INSERT INTO api_keys (user_id, key_hash, created_time) "
                    f"VALUES ({user_id}, '{'k' * 63}{user_id}', 1)"
                )
                for i in range(3):
                    await conn.exec_driver_sql(
                        "INSERT INTO addresses (user_id, address, domain, created_time) "
                        f"VALUES ({user_id}, 'a{user_id}x{i}', 'relay.test', 1)"
                    )
    finally:
        await engine.dispose()


async def _read(url: str) -> tuple[list[object], int, int, int, list[int]]:
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.connect() as conn:
            boxes = [await mailboxes.list_mailboxes(conn, user_id) for user_id in (1, 2)]
            count = (
                await conn.scalar(select(func.count()).select_from(addresses)),
                await conn.scalar(select(func.count()).select_from(api_keys)),
                await conn.scalar(select(func.count()).select_from(address_mailboxes)),
            )
            ids = await conn.scalars(select(users.c.id).order_by(users.c.id))
            address_counts = [await kept_address_count(conn, user_id) for user_id in ids]
            chosen = await mailboxes.address_mailbox_ids(
                conn, 1, int(await conn.scalar(select(func.min(addresses.c.id))) or 0)
            )
            return (
                [[m.json() for m in b] for b in boxes],
                int(count[0] or 0),
                int(count[1] or 0),
                int(count[2] or 0),
                address_counts + chosen,
            )
    finally:
        await engine.dispose()


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_existing_users_keep_their_mailbox_as_mailbox_one(backend: str, tmp_path: Path) -> None:
    with fresh_database(backend, tmp_path) as url:
        command.upgrade(alembic_config(url), "0005")
        asyncio.run(_seed(url))
        upgrade(url)
        boxes, n_addresses, n_keys, n_chosen, rest = asyncio.run(_read(url))
        assert boxes == [
            [
                {
                    "id": u,
                    "email": f"U{u}@Example.com",
                    "verified": True,
                    "default": True,
                    "created_time": 7,
                }
            ]
            for u in (1, 2)
        ]
        assert (n_addresses, n_keys, n_chosen) == (6, 2, 0)
        # Counts kept, and an address with no choice forwards to mailbox one.
        assert rest == [3, 3, 1]
        # Down and up again: the users' data survives and mailbox one is made anew.
        command.downgrade(alembic_config(url), "0005")
        upgrade(url)
        assert asyncio.run(_read(url))[:3] == (boxes, 6, 2)
