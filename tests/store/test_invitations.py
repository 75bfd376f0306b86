"""Invitations in the database, on both backends: made, listed, revoked, and redeemed
exactly once, also when two sign-ups race for one link."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from maskmail.core.errors import InvalidAddress
from maskmail.core.invitations import InvitationInvalid, InvitationNotFound, State
from maskmail.services import invitations
from maskmail.store import accounts
from maskmail.store.clock import now
from maskmail.store.engine import transaction
from maskmail.store.tables import invitations as table

pytestmark = pytest.mark.anyio


async def test_a_new_invitation_is_open_and_keeps_only_a_hash(conn: AsyncConnection) -> None:
    made = await invitations.create(conn, expires_in=3600)
    assert made.token.startswith("mmi_")
    assert await invitations.is_open(conn, made.token)
    assert made.invitation.state(now()) is State.OPEN
    assert made.invitation.expires_time - made.invitation.created_time == 3600
    assert made.invitation.created_by is None
    stored = (await conn.execute(table.select().where(table.c.id == made.invitation.id))).one()
    assert made.token not in [str(v) for v in stored]
    assert made.link("https://relay.example/app/") == (
        f"https://relay.example/app/sign-up?invite={made.token}"
    )


async def test_redeem_spends_it_once(conn: AsyncConnection) -> None:
    made = await invitations.create(conn)
    spent = await invitations.redeem(conn, made.token)
    assert spent.id == made.invitation.id
    assert spent.state(now()) is State.USED
    with pytest.raises(InvitationInvalid):
        await invitations.redeem(conn, made.token)
    assert not await invitations.is_open(conn, made.token)


async def test_the_account_it_made_is_recorded(conn: AsyncConnection) -> None:
    admin = await accounts.add_user(conn, "admin-inv@example.com")
    made = await invitations.create(conn, created_by=admin)
    user = await accounts.add_user(conn, "joined-inv@example.com")
    spent = await invitations.redeem(conn, made.token)
    await invitations.record_account(conn, spent.id, user)
    listed = {i.id: i for i in await invitations.list_invitations(conn)}
    assert listed[made.invitation.id].used_by == user
    assert listed[made.invitation.id].created_by == admin


async def test_an_expired_invitation_is_refused(conn: AsyncConnection) -> None:
    made = await invitations.create(conn)
    # The server's clock decides: the row says it expired a second ago.
    await conn.execute(
        update(table).where(table.c.id == made.invitation.id).values(expires_time=now() - 1)
    )
    assert not await invitations.is_open(conn, made.token)
    with pytest.raises(InvitationInvalid):
        await invitations.redeem(conn, made.token)
    listed = {i.id: i for i in await invitations.list_invitations(conn)}
    assert listed[made.invitation.id].state(now()) is State.EXPIRED


async def test_a_revoked_invitation_is_refused(conn: AsyncConnection) -> None:
    made = await invitations.create(conn)
    revoked = await invitations.revoke(conn, made.invitation.id)
    assert revoked.state(now()) is State.REVOKED
    with pytest.raises(InvitationInvalid):
        await invitations.redeem(conn, made.token)


async def test_revoking_a_used_one_keeps_it_used(conn: AsyncConnection) -> None:
    made = await invitations.create(conn)
    await invitations.redeem(conn, made.token)
    assert (await invitations.revoke(conn, made.invitation.id)).state(now()) is State.USED


async def test_revoking_an_unknown_id_is_not_found(conn: AsyncConnection) -> None:
    with pytest.raises(InvitationNotFound):
        await invitations.revoke(conn, 987_654_321)


@pytest.mark.parametrize("token", ["", "mmi_nothing", "not-a-token", "mmi_" + "x" * 200])
async def test_unknown_tokens_are_invalid(conn: AsyncConnection, token: str) -> None:
    assert not await invitations.is_open(conn, token)
    with pytest.raises(InvitationInvalid):
        await invitations.redeem(conn, token)


@pytest.mark.parametrize("seconds", [0, 59, 90 * 86_400 + 1])
async def test_lifetimes_out_of_range_are_refused(conn: AsyncConnection, seconds: int) -> None:
    with pytest.raises(InvalidAddress):
        await invitations.create(conn, expires_in=seconds)


async def test_two_racing_redeems_of_one_token_one_wins(engine: AsyncEngine) -> None:
    async with transaction(engine) as conn:
        made = await invitations.create(conn)

    async def redeem() -> bool:
        try:
            async with transaction(engine) as conn:
                await invitations.redeem(conn, made.token)
                # Hold the transaction open a moment, so that the other one really waits.
                await asyncio.sleep(0.05)
        except InvitationInvalid:
            return False
        return True

    results = await asyncio.gather(*(redeem() for _ in range(6)))
    assert sorted(results) == [False] * 5 + [True]
