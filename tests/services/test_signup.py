"""Signing up with no HTTP, on both backends: a sender and limiters are handed in, as
the dashboard hands them."""

from __future__ import annotations

import asyncio
import re
from email import message_from_bytes

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from maskmail.config import Settings
from maskmail.core.errors import (
    DeliveryDeferred,
    InvalidAddress,
    MailboxNotFound,
    RateLimited,
    UserNotFound,
)
from maskmail.core.invitations import InvitationInvalid
from maskmail.core.mailboxes import VERIFY_SECONDS
from maskmail.core.passwords import WeakPassword, verify
from maskmail.core.signup import SignUpClosed
from maskmail.http_shared.ratelimit import Limiter
from maskmail.services import invitations, signup
from maskmail.store import accounts, mailboxes, sessions, signups
from maskmail.store.clock import now
from maskmail.store.engine import transaction
from maskmail.store.tables import pending_signups
from tests.support import add_custom_domain

# argon2id at its lowest cost (autouse), as the dashboard's tests have it.
from tests.web.conftest import cheap_argon2  # noqa: F401

pytestmark = pytest.mark.anyio

OPEN = Settings(domain="maskrelay.net", signup="open")
INVITE = Settings(domain="maskrelay.net", signup="invite")
PASSWORD = "a good long password"
LINKS = signup.Links(verify=lambda t: f"https://dash.test/sign-up/verify?token={t}", sign_in="S")


class Recorder:
    """A sender that keeps what it was given."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes, str]] = []

    async def deliver(self, message: bytes, *, sender: str, recipient: str) -> None:
        self.sent.append((message, recipient))

    async def close(self) -> None:
        pass

    def text(self, n: int = -1) -> str:
        payload = message_from_bytes(self.sent[n][0]).get_payload(decode=True)
        assert isinstance(payload, bytes)
        return payload.decode()

    def code(self) -> str:
        found = re.search(r"code: (\d{6})", self.text())
        assert found is not None
        return found.group(1)

    def token(self) -> str:
        found = re.search(r"token=(\S+)", self.text())
        assert found is not None
        return found.group(1)


async def _sign_up(
    conn: AsyncConnection,
    sender: Recorder,
    email: str,
    *,
    settings: Settings = OPEN,
    invite: str = "",
    password: str = PASSWORD,
) -> str:
    return await signup.sign_up(
        conn,
        settings,
        email=email,
        password=password,
        invite=invite,
        sender=sender,
        links=LINKS,
    )


async def test_open_sign_up_waits_for_the_code(conn: AsyncConnection) -> None:
    sender = Recorder()
    ticket = await _sign_up(conn, sender, "new@example.com")
    user = await accounts.user_id_for_email(conn, "new@example.com")
    # No password yet: the account cannot sign in before its mailbox is verified.
    account = await sessions.account_for_email(conn, "new@example.com")
    assert account is not None and account.password_hash is None
    [box] = await mailboxes.list_mailboxes(conn, user)
    assert (box.verified, box.default) == (False, False)
    assert sender.sent[0][1] == "new@example.com"
    assert "https://dash.test/sign-up/verify?token=" in sender.text()
    assert await signup.confirm_code(conn, ticket, sender.code(), limiter=Limiter("5/hour")) == (
        "new@example.com"
    )
    account = await sessions.account_for_email(conn, "new@example.com")
    assert account is not None and verify(account.password_hash, PASSWORD)
    [box] = await mailboxes.list_mailboxes(conn, user)
    assert (box.verified, box.default) == (True, True)
    assert await signups.by_email(conn, "new@example.com") is None


async def test_the_link_finishes_it_too(conn: AsyncConnection) -> None:
    sender = Recorder()
    await _sign_up(conn, sender, "linked@example.com")
    assert await signup.confirm_link(conn, sender.token()) == "linked@example.com"
    account = await sessions.account_for_email(conn, "linked@example.com")
    assert account is not None and verify(account.password_hash, PASSWORD)
    with pytest.raises(MailboxNotFound, match="used already or has expired"):
        await signup.confirm_link(conn, sender.token())


async def test_closed_refuses(conn: AsyncConnection) -> None:
    with pytest.raises(SignUpClosed):
        await _sign_up(conn, Recorder(), "x@example.com", settings=Settings(domain="maskrelay.net"))


async def test_invite_mode_spends_the_invitation(conn: AsyncConnection) -> None:
    with pytest.raises(InvitationInvalid):
        await _sign_up(conn, Recorder(), "inv@example.com", settings=INVITE)
    made = await invitations.create(conn)
    await _sign_up(conn, Recorder(), "inv@example.com", settings=INVITE, invite=made.token)
    user = await accounts.user_id_for_email(conn, "inv@example.com")
    [listed] = [i for i in await invitations.list_invitations(conn) if i.id == made.invitation.id]
    assert listed.used_by == user
    with pytest.raises(InvitationInvalid):
        await _sign_up(conn, Recorder(), "inv2@example.com", settings=INVITE, invite=made.token)


@pytest.mark.parametrize(
    "email", ["me@maskrelay.net", "me@sub.MaskRelay.net", "me@owned.example", "me@mx.owned.example"]
)
async def test_addresses_of_the_relay_are_refused(conn: AsyncConnection, email: str) -> None:
    owner = await accounts.add_user(conn, "domain-owner@example.com")
    await add_custom_domain(
        conn, owner, "owned.example", relay_domain="maskrelay.net", verified=False
    )
    sender = Recorder()
    with pytest.raises(InvalidAddress, match="relay's own domain"):
        await _sign_up(conn, sender, email)
    assert not sender.sent


@pytest.mark.parametrize(("email", "password"), [("not an email", PASSWORD), ("a@b.example", "")])
async def test_bad_input_is_refused(conn: AsyncConnection, email: str, password: str) -> None:
    with pytest.raises((InvalidAddress, WeakPassword)):
        await _sign_up(conn, Recorder(), email, password=password)


async def test_a_taken_address_gets_a_notice_and_nothing_changes(conn: AsyncConnection) -> None:
    user = await accounts.add_user(conn, "taken@example.com")
    sender = Recorder()
    ticket = await _sign_up(conn, sender, "Taken@example.com")
    assert ticket
    assert "you have one already" in sender.text()
    assert "code" not in sender.text()
    assert len(await mailboxes.list_mailboxes(conn, user)) == 1
    assert await signups.by_email(conn, "taken@example.com") is None
    with pytest.raises(InvalidAddress, match="wrong or expired code"):
        await signup.confirm_code(conn, ticket, "123456", limiter=Limiter("5/hour"))


async def test_a_waiting_sign_up_is_replaced(conn: AsyncConnection) -> None:
    first, second = Recorder(), Recorder()
    old_ticket = await _sign_up(conn, first, "twice@example.com")
    old_user = await accounts.user_id_for_email(conn, "twice@example.com")
    new_ticket = await _sign_up(conn, second, "twice@example.com", password="another password!")
    assert await accounts.user_id_for_email(conn, "twice@example.com") != old_user
    limiter = Limiter("5/hour")
    with pytest.raises(InvalidAddress):
        await signup.confirm_code(conn, old_ticket, first.code(), limiter=limiter)
    await signup.confirm_code(conn, new_ticket, second.code(), limiter=limiter)
    account = await sessions.account_for_email(conn, "twice@example.com")
    assert account is not None and verify(account.password_hash, "another password!")


async def test_wrong_codes_are_counted(conn: AsyncConnection) -> None:
    sender = Recorder()
    ticket = await _sign_up(conn, sender, "guess@example.com")
    limiter = Limiter("5/hour")
    right = sender.code()
    wrong = "000000" if right != "000000" else "111111"
    for _ in range(5):
        with pytest.raises(InvalidAddress, match="wrong or expired code"):
            await signup.confirm_code(conn, ticket, wrong, limiter=limiter)
    with pytest.raises(RateLimited, match="too many codes"):
        await signup.confirm_code(conn, ticket, right, limiter=limiter)
    # The same answer for a ticket that names nothing.
    for _ in range(5):
        with pytest.raises(InvalidAddress):
            await signup.confirm_code(conn, "nothing", wrong, limiter=limiter)
    with pytest.raises(RateLimited, match="too many codes"):
        await signup.confirm_code(conn, "nothing", wrong, limiter=limiter)


async def test_without_an_outbound_path_nothing_is_made(conn: AsyncConnection) -> None:
    with pytest.raises(DeliveryDeferred):
        await signup.sign_up(
            conn,
            OPEN,
            email="nomail@example.com",
            password=PASSWORD,
            invite="",
            sender=None,
            links=LINKS,
        )


async def test_abandoned_sign_ups_are_forgotten(conn: AsyncConnection) -> None:
    await _sign_up(conn, Recorder(), "old@example.com")
    old = await accounts.user_id_for_email(conn, "old@example.com")
    await conn.execute(
        update(pending_signups)
        .where(pending_signups.c.user_id == old)
        .values(created_time=now() - VERIFY_SECONDS - 1)
    )
    await _sign_up(conn, Recorder(), "fresh@example.com")
    with pytest.raises(UserNotFound):
        await accounts.user_id_for_email(conn, "old@example.com")
    assert await signups.by_email(conn, "fresh@example.com") is not None


async def test_racing_sign_ups_with_one_address_make_one_account(engine: AsyncEngine) -> None:
    email = f"race-{id(engine)}@example.com"

    async def one() -> str:
        async with transaction(engine) as conn:
            return await _sign_up(conn, Recorder(), email)

    tickets = await asyncio.gather(one(), one())
    assert all(tickets)
    async with transaction(engine) as conn:
        user = await accounts.user_id_for_email(conn, email)
        assert len(await mailboxes.list_mailboxes(conn, user)) == 1
        await accounts.delete_user_rows(conn, user)
