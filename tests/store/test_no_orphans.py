"""Rows that point at a deleted row go with it (issue 21, item 10): after each way of
deleting something, no row anywhere refers to a row that is gone, and deleting a user
takes everything of theirs even where foreign keys are not enforced."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import event, exists, func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from maskmail.core.mailboxes import new_proof
from maskmail.store import accounts, custom_domains, mailboxes, sessions, subdomains
from maskmail.store.addresses import Place, create_address, delete_address
from maskmail.store.engine import create_engine
from maskmail.store.tables import (
    bounces,
    daily_activity,
    first_mail_addresses,
    mailbox_keys,
    metadata,
    subdomain_names,
)
from maskmail.store.users_admin import delete_user
from tests.support import add_custom_domain

pytestmark = pytest.mark.anyio
DOMAIN = "relay.test"


async def orphans(conn: AsyncConnection) -> list[str]:
    """Each foreign key of the schema with rows whose parent row is gone."""
    found = []
    for table in metadata.sorted_tables:
        for fk in table.foreign_keys:
            parent = fk.column
            # A null in a nullable key (who made an invitation) points at nothing.
            missing = fk.parent.is_not(None) & ~exists().where(parent == fk.parent)
            count = await conn.scalar(select(func.count()).select_from(table).where(missing))
            if count:
                found.append(f"{table.name}.{fk.parent.name}: {count}")
    return found


async def _everything(conn: AsyncConnection, email: str) -> dict[str, int]:
    """A user with a row in every table that can hold one of theirs."""
    user_id = await accounts.add_user(conn, email)
    await accounts.add_key(conn, user_id, email.ljust(64, "k")[:64])
    await sessions.start_session(conn, user_id, email.ljust(64, "s")[:64], lifetime=60)
    name = email.split("@")[0]
    sub = await subdomains.claim(conn, user_id, f"{name}sub", domain=DOMAIN)
    domain_id, _ = await add_custom_domain(conn, user_id, f"{name}.example", relay_domain=DOMAIN)
    address = await create_address(conn, user_id, domain=DOMAIN, length=8)
    on_sub = await create_address(conn, user_id, domain=DOMAIN, length=8, place=Place.SUBDOMAIN)
    on_domain = await create_address(conn, user_id, domain=f"{name}.example", length=8)
    proof = new_proof()
    box = await mailboxes.add_mailbox(conn, user_id, f"{name}@other.example", proof, limit=5)
    await mailboxes.verify_by_token(conn, proof.token_hash)
    for made in (address, on_sub, on_domain):
        await mailboxes.set_address_mailboxes(conn, user_id, made.id, [box.id])
        await conn.execute(insert(daily_activity).values(address_id=made.id, day=1))
        await conn.execute(
            insert(bounces).values(
                address_id=made.id, mailbox_id=box.id, received_time=1, kind="hard", status="x"
            )
        )
    await conn.execute(
        insert(first_mail_addresses).values(address_id=on_sub.id, user_id=user_id, created_time=1)
    )
    await conn.execute(insert(subdomain_names).values(user_id=user_id, created_time=1))
    await conn.execute(
        insert(mailbox_keys).values(
            mailbox_id=box.id, public_key="k", fingerprint="f", created_time=1
        )
    )
    return {
        "user": user_id,
        "address": address.id,
        "subdomain": sub.id,
        "domain": domain_id,
        "mailbox": box.id,
    }


async def test_each_deletion_leaves_no_row_pointing_at_what_went(conn: AsyncConnection) -> None:
    made = await _everything(conn, "olga@example.com")
    user_id = made["user"]
    assert await orphans(conn) == []
    await delete_address(conn, user_id, made["address"])
    assert await orphans(conn) == []
    await mailboxes.delete_mailbox(conn, user_id, made["mailbox"])
    assert await orphans(conn) == []
    await subdomains.remove(conn, user_id, made["subdomain"])
    assert await orphans(conn) == []
    await custom_domains.remove(conn, user_id, made["domain"])
    assert await orphans(conn) == []
    await delete_user(conn, "olga@example.com")
    assert await orphans(conn) == []


@pytest.fixture
async def unenforced(database_url: str, backend: str) -> AsyncIterator[AsyncConnection]:
    """A connection on which foreign keys do nothing (SQLite's setting off; PostgreSQL's
    replica role), inside a transaction rolled back after the test."""
    engine: AsyncEngine = create_engine(database_url, pool_size=1)
    if backend == "sqlite":

        @event.listens_for(engine.sync_engine, "connect")
        def _off(dbapi_connection: object, _record: object) -> None:
            dbapi_connection.execute("PRAGMA foreign_keys=OFF")  # type: ignore[attr-defined]

    try:
        async with engine.connect() as connection:
            outer = await connection.begin()
            if backend == "postgres":
                await connection.exec_driver_sql("SET LOCAL session_replication_role = replica")
            yield connection
            await outer.rollback()
    finally:
        await engine.dispose()


async def test_deleting_a_user_takes_everything_without_the_cascades(
    unenforced: AsyncConnection,
) -> None:
    await _everything(unenforced, "pia@example.com")
    assert await orphans(unenforced) == []
    await delete_user(unenforced, "pia@example.com")
    assert await orphans(unenforced) == []
