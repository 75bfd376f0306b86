"""store/mailboxes on both backends: the link and code expire and are spent, a wrong code
changes nothing, the limit holds, and a deleted mailbox's addresses fall back."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.errors import InvalidAddress, MailboxLimitReached, MailboxNotFound
from maskmail.core.mailboxes import new_proof
from maskmail.store import accounts, mailboxes
from maskmail.store.addresses import create_address
from maskmail.store.clock import now
from maskmail.store.tables import mailboxes as table

pytestmark = pytest.mark.anyio


async def test_only_hashes_are_stored_and_the_link_is_spent(conn: AsyncConnection) -> None:
    user = await accounts.add_user(conn, "hashes@example.com")
    proof = new_proof()
    added = await mailboxes.add_mailbox(conn, user, "new@example.net", proof, limit=10)
    row = (await conn.execute(select(table).where(table.c.id == added.id))).one()
    assert proof.token not in [str(v) for v in row] and proof.code not in [str(v) for v in row]
    assert (row.token_hash, row.code_hash) == (proof.token_hash, proof.code_hash)
    verified = await mailboxes.verify_by_token(conn, proof.token_hash)
    assert verified.verified and not verified.default
    with pytest.raises(MailboxNotFound):
        await mailboxes.verify_by_token(conn, proof.token_hash)
    spent = (await conn.execute(select(table).where(table.c.id == added.id))).one()
    assert (spent.token_hash, spent.code_hash, spent.expires_time) == (None, None, None)


async def test_an_expired_link_or_code_verifies_nothing(conn: AsyncConnection) -> None:
    user = await accounts.add_user(conn, "expired@example.com")
    proof = new_proof()
    added = await mailboxes.add_mailbox(conn, user, "late@example.net", proof, limit=10)
    row = (await conn.execute(select(table.c.expires_time).where(table.c.id == added.id))).one()
    assert now() + 24 * 3600 - 5 <= row.expires_time <= now() + 24 * 3600
    await conn.execute(update(table).where(table.c.id == added.id).values(expires_time=now() - 1))
    with pytest.raises(MailboxNotFound):
        await mailboxes.verify_by_token(conn, proof.token_hash)
    with pytest.raises(InvalidAddress):
        await mailboxes.verify_by_code(conn, user, added.id, proof.code_hash)
    assert not (await mailboxes.get_mailbox(conn, user, added.id)).verified


async def test_a_wrong_code_or_another_user_verifies_nothing(conn: AsyncConnection) -> None:
    user = await accounts.add_user(conn, "codes@example.com")
    other = await accounts.add_user(conn, "other-codes@example.com")
    proof = new_proof()
    added = await mailboxes.add_mailbox(conn, user, "code@example.net", proof, limit=10)
    with pytest.raises(InvalidAddress):
        await mailboxes.verify_by_code(conn, user, added.id, new_proof().code_hash)
    with pytest.raises(MailboxNotFound):
        await mailboxes.verify_by_code(conn, other, added.id, proof.code_hash)
    assert not (await mailboxes.get_mailbox(conn, user, added.id)).verified
    assert (await mailboxes.verify_by_code(conn, user, added.id, proof.code_hash)).verified


async def test_the_limit_counts_mailbox_one(conn: AsyncConnection) -> None:
    user = await accounts.add_user(conn, "limit@example.com")
    await mailboxes.add_mailbox(conn, user, "two@example.net", new_proof(), limit=2)
    with pytest.raises(MailboxLimitReached):
        await mailboxes.add_mailbox(conn, user, "three@example.net", new_proof(), limit=2)
    with pytest.raises(InvalidAddress):
        await mailboxes.add_mailbox(conn, user, "TWO@example.net", new_proof(), limit=10)
    assert len(await mailboxes.list_mailboxes(conn, user)) == 2


async def test_a_deleted_mailbox_leaves_its_addresses_on_the_default(
    conn: AsyncConnection,
) -> None:
    user = await accounts.add_user(conn, "deleted@example.com")
    [one] = await mailboxes.list_mailboxes(conn, user)
    proof = new_proof()
    two = await mailboxes.add_mailbox(conn, user, "two@example.net", proof, limit=10)
    await mailboxes.verify_by_token(conn, proof.token_hash)
    both = await create_address(conn, user, domain="relay.test", length=8)
    only_two = await create_address(conn, user, domain="relay.test", length=8)
    await mailboxes.set_address_mailboxes(conn, user, both.id, [one.id, two.id])
    await mailboxes.set_address_mailboxes(conn, user, only_two.id, [two.id])
    await mailboxes.delete_mailbox(conn, user, two.id)
    assert await mailboxes.address_mailbox_ids(conn, user, both.id) == [one.id]
    assert await mailboxes.address_mailbox_ids(conn, user, only_two.id) == [one.id]
    with pytest.raises(InvalidAddress):
        await mailboxes.delete_mailbox(conn, user, one.id)
