"""No id that has left the process is handed out again, on either backend (issue 21,
item 10): SQLite's plain ``INTEGER PRIMARY KEY`` gave a deleted newest row's id to the
next row, and a deleted mailbox's bounces then counted against another user's mailbox."""

from __future__ import annotations

import secrets

import pytest
from sqlalchemy import Table, delete, func, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.dsn import Bounce, Kind
from maskmail.core.errors import AddressNotFound
from maskmail.core.mailboxes import new_proof
from maskmail.store import address_bounces, mailboxes, tables
from maskmail.store import bounces as store
from maskmail.store.addresses import get_address
from maskmail.store.clock import now
from maskmail.store.tables import (
    addresses,
    api_keys,
    bounces,
    custom_domains,
    metadata,
    reverse_aliases,
    subdomains,
    users,
    web_sessions,
)
from tests.support import new_address

pytestmark = pytest.mark.anyio

HARD = Bounce(Kind.HARD, "5.1.1")

# Every table whose rows have a surrogate id of their own.
SURROGATE = tuple(
    t for t in metadata.sorted_tables if "id" in t.c and t.c.id.primary_key and t.c.id.autoincrement
)


def test_every_surrogate_id_table_is_covered() -> None:
    assert {t.name for t in SURROGATE} == {
        "users",
        "api_keys",
        "addresses",
        "subdomains",
        "custom_domains",
        "reverse_aliases",
        "bounces",
        "mailboxes",
        "web_sessions",
        "invitations",
        "security_keys",
        "audit_log",
    }
    assert all(t.dialect_kwargs.get("sqlite_autoincrement") for t in SURROGATE)


def _row(table: Table, user_id: int, address_id: int) -> dict[str, object]:
    """The columns a new row of ``table`` needs, unique for each call."""
    tag = secrets.token_hex(8)
    values: dict[str, object] = {"created_time": 1}
    if table is users:
        return {**values, "email": f"{tag}@example.com", "email_key": f"{tag}@example.com"}
    if table is api_keys:
        return {**values, "user_id": user_id, "key_hash": tag * 4}
    if table is addresses:
        return {**values, "user_id": user_id, "address": tag, "domain": "relay.test"}
    if table is subdomains:
        return {**values, "user_id": user_id, "subdomain": tag}
    if table is custom_domains:
        return {
            **values,
            "user_id": user_id,
            "domain": f"{tag}.example",
            "ownership_token": tag,
            "dkim_selector": "s",
            "dkim_private_key": "k",
            "dkim_txt": "t",
        }
    if table is reverse_aliases:
        return {
            **values,
            "address_id": address_id,
            "sender": f"{tag}@outside.example",
            "alias": tag,
            "domain": "relay.test",
        }
    if table is bounces:
        del values["created_time"]
        return {**values, "address_id": address_id, "received_time": 1, "kind": "hard"}
    if table is tables.mailboxes:
        return {**values, "user_id": user_id, "email": f"{tag}@x.example", "email_key": tag}
    if table is tables.invitations:
        return {**values, "created_by": user_id, "token_hash": tag * 4, "expires_time": 2}
    if table is tables.security_keys:
        return {
            **values,
            "user_id": user_id,
            "credential_id": tag,
            "public_key": "pk",
            "sign_count": 0,
            "name": "key",
        }
    if table is tables.audit_log:
        return {**values, "actor": "a", "action": "x", "target": tag}
    assert table is web_sessions
    return {**values, "user_id": user_id, "token_hash": tag * 4, "expires_time": 2}


async def _add(conn: AsyncConnection, table: Table, user_id: int, address_id: int) -> int:
    row = _row(table, user_id, address_id)
    if table is bounces:
        row["status"] = "5.1.1"
    made = await conn.execute(insert(table).values(row).returning(table.c.id))
    return int(made.scalar_one())


@pytest.mark.parametrize("table", SURROGATE, ids=lambda t: t.name)
async def test_a_deleted_newest_id_goes_to_nobody_else(conn: AsyncConnection, table: Table) -> None:
    ann, ann_address = await new_address(conn)
    bob, bob_address = await new_address(conn)
    handed_out = {int(i) for i in await conn.scalars(select(table.c.id))}
    newest = await _add(conn, table, ann, ann_address)
    handed_out.add(newest)
    assert newest == await conn.scalar(select(func.max(table.c.id)))
    await conn.execute(delete(table).where(table.c.id == newest))
    again = await _add(conn, table, bob, bob_address)
    assert again not in handed_out
    assert again > newest


async def test_bobs_new_mailbox_is_not_paused_by_anns_old_bounces(conn: AsyncConnection) -> None:
    """The issue's report: Ann's deleted mailbox's id went to Bob's new one, and the
    bounces recorded against Ann's paused Bob's after one bounce of his own."""
    ann, ann_address = await new_address(conn)
    bob, bob_address = await new_address(conn)
    anns = await mailboxes.add_mailbox(conn, ann, "ann@elsewhere.example", new_proof(), limit=5)
    when = now()
    for _ in range(2):
        paused = await store.record_mailbox_bounce(
            conn, ann_address, anns.id, HARD, threshold=3, when=when
        )
        assert paused is None
    await mailboxes.delete_mailbox(conn, ann, anns.id)
    bobs = await mailboxes.add_mailbox(conn, bob, "bob@elsewhere.example", new_proof(), limit=5)
    assert bobs.id != anns.id
    paused = await store.record_mailbox_bounce(
        conn, bob_address, bobs.id, HARD, threshold=3, when=when + 1
    )
    assert paused is None
    assert (await mailboxes.get_mailbox(conn, bob, bobs.id)).json()["id"] == bobs.id
    counted = await conn.scalar(
        select(func.count()).select_from(bounces).where(bounces.c.mailbox_id == bobs.id)
    )
    assert counted == 1


async def test_bounces_from_before_a_mailbox_was_made_never_count_against_it(
    conn: AsyncConnection,
) -> None:
    """A database that reused an id before migration 0013 still holds the old owner's
    bounces under the new mailbox's id: they are older than the mailbox, and ignored."""
    bob, bob_address = await new_address(conn)
    bobs = await mailboxes.add_mailbox(conn, bob, "bob@elsewhere.example", new_proof(), limit=5)
    made = (await mailboxes.get_mailbox(conn, bob, bobs.id)).created_time
    for _ in range(2):
        await conn.execute(
            insert(bounces).values(
                address_id=bob_address,
                mailbox_id=bobs.id,
                received_time=made - 10,
                kind="hard",
                status="5.1.1",
            )
        )
    paused = await store.record_mailbox_bounce(
        conn, bob_address, bobs.id, HARD, threshold=3, when=made + 1
    )
    assert paused is None


async def test_every_id_comes_from_a_sequence_that_never_goes_back(
    conn: AsyncConnection, backend: str
) -> None:
    """PostgreSQL: each id column takes its value from a sequence (serial); SQLite: each
    table with an id is AUTOINCREMENT, so it keeps its largest id in sqlite_sequence."""
    for table in SURROGATE:
        if backend == "postgres":
            default = await conn.scalar(
                text(
                    "SELECT column_default FROM information_schema.columns "
                    "WHERE table_schema = current_schema() AND table_name = :t "
                    "AND column_name = 'id'"
                ),
                {"t": table.name},
            )
            assert str(default).startswith("nextval("), table.name
        else:
            create = await conn.scalar(
                text("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = :t"),
                {"t": table.name},
            )
            assert "PRIMARY KEY AUTOINCREMENT" in str(create), table.name


async def test_a_bounce_for_a_deleted_mailbox_counts_against_nothing(
    conn: AsyncConnection,
) -> None:
    """It came back to a bounce address signed for a mailbox that is gone: it is listed
    under its address, but neither the address nor any mailbox gets nearer a pause."""
    ann, ann_address = await new_address(conn)
    anns = await mailboxes.add_mailbox(conn, ann, "ann@elsewhere.example", new_proof(), limit=5)
    await mailboxes.delete_mailbox(conn, ann, anns.id)
    when = now()
    gone = await store.record_mailbox_bounce(
        conn, ann_address, anns.id, HARD, threshold=1, when=when
    )
    assert gone is None
    recorded = await address_bounces.record_bounce(conn, ann_address, HARD, threshold=2, when=when)
    assert (recorded.hard_bounces, recorded.paused) == (1, False)
    report = await store.bounce_report(conn, ann, ann_address, now=when)
    assert len(report.latest) == 2


async def test_a_bounce_signed_before_its_row_was_made_is_not_its(conn: AsyncConnection) -> None:
    """A bounce address names its address (and mailbox) by id and the day it was signed:
    a row made after that day holds the id of one gone before (a database that reused
    ids before migration 0013), so the bounce counts against neither."""
    ann, ann_address = await new_address(conn)
    made = (await get_address(conn, ann, ann_address)).created_time
    when = now()
    assert await store.address_exists(conn, ann_address, made_before=made + 1)
    assert not await store.address_exists(conn, ann_address, made_before=made)
    with pytest.raises(AddressNotFound):
        await address_bounces.record_bounce(
            conn, ann_address, HARD, threshold=1, when=when, made_before=made
        )
    with pytest.raises(AddressNotFound):
        await store.record_mailbox_bounce(
            conn, ann_address, 1, HARD, threshold=1, when=when, made_before=made
        )
    anns = await mailboxes.add_mailbox(conn, ann, "ann@elsewhere.example", new_proof(), limit=5)
    # Made a day after the address, in the id of a mailbox that was gone.
    box_made = made + 86_400
    await conn.execute(
        update(tables.mailboxes)
        .where(tables.mailboxes.c.id == anns.id)
        .values(created_time=box_made)
    )
    for _ in range(2):
        paused = await store.record_mailbox_bounce(
            conn, ann_address, anns.id, HARD, threshold=1, when=when, made_before=box_made
        )
        assert paused is None
    recorded = await address_bounces.record_bounce(
        conn, ann_address, HARD, threshold=3, when=when, made_before=box_made
    )
    assert (recorded.hard_bounces, recorded.paused) == (1, False)
    paused = await store.record_mailbox_bounce(
        conn, ann_address, anns.id, HARD, threshold=1, when=box_made, made_before=box_made + 1
    )
    assert paused is not None
