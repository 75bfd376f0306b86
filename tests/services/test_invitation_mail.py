"""Mailing an invitation, with no HTTP, on both backends: the address refused by the one
rule (relay and custom domains) before anything is made, a server without an outbound
path and a refused message leave no invitation and no audit row, and the row of a
mailed one never names the address."""

from __future__ import annotations

from email import message_from_bytes

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.config import Settings
from maskmail.core.errors import DeliveryDeferred, DeliveryRefused, InvalidAddress
from maskmail.services import admin, invitation_mail, invitations
from maskmail.store import accounts, audit_log
from tests.services.test_signup import Recorder
from tests.support import add_custom_domain

pytestmark = pytest.mark.anyio

SETTINGS = Settings(domain="maskrelay.net", signup="invite")
ACTOR = admin.Actor(None, "root@example.com", "192.0.2.1")


class Refusing(Recorder):
    """A smarthost that refuses every message."""

    async def deliver(self, message: bytes, *, sender: str, recipient: str) -> None:
        raise DeliveryRefused("550 no such user")


def _mailing(email: str, sender: Recorder | None) -> invitation_mail.Mailing:
    return invitation_mail.Mailing(email, SETTINGS, sender, "https://dash.test/")


async def _nothing_made(conn: AsyncConnection) -> None:
    assert await invitations.list_invitations(conn) == []
    assert await audit_log.count(conn) == 0


async def test_a_mailed_invitation_is_logged_without_the_address(conn: AsyncConnection) -> None:
    sender = Recorder()
    made = await admin.make_invitation(conn, ACTOR, "3d", _mailing("Pal@Example.org", sender))
    ((raw, recipient),) = sender.sent
    message = message_from_bytes(raw)
    assert recipient == message["To"] == "Pal@example.org"
    assert message["From"] == "accounts@maskrelay.net" and message["Subject"]
    assert message.get_content_type() == "text/plain" and not message.is_multipart()
    assert made.link("https://dash.test/") in sender.text()
    (entry,) = await audit_log.newest(conn, offset=0, limit=5)
    assert (entry.action, entry.target) == ("invite", f"invitation {made.invitation.id}")
    assert entry.detail.startswith("expires ") and entry.detail.endswith(", mailed")
    assert "example.org" not in repr(entry).lower() and made.token not in repr(entry)


@pytest.mark.parametrize(
    "email", ["me@maskrelay.net", "me@sub.MaskRelay.net", "me@owned.example", "me@mx.owned.example"]
)
async def test_relay_and_custom_domains_are_refused(conn: AsyncConnection, email: str) -> None:
    owner = await accounts.add_user(conn, "domain-owner@example.com")
    await add_custom_domain(
        conn, owner, "owned.example", relay_domain="maskrelay.net", verified=False
    )
    sender = Recorder()
    with pytest.raises(InvalidAddress, match="relay's own domain"):
        await admin.make_invitation(conn, ACTOR, "7d", _mailing(email, sender))
    with pytest.raises(InvalidAddress, match="relay's own domain"):
        await invitation_mail.create_and_mail(conn, _mailing(email, sender), expires_in=3600)
    assert not sender.sent
    await _nothing_made(conn)


async def test_no_outbound_path_makes_nothing(conn: AsyncConnection) -> None:
    with pytest.raises(DeliveryDeferred):
        await admin.make_invitation(conn, ACTOR, "7d", _mailing("pal@example.org", None))
    await _nothing_made(conn)


async def test_a_refused_message_leaves_no_invitation(conn: AsyncConnection) -> None:
    # As the page runs it: in a savepoint, which the refusal rolls back.
    with pytest.raises(DeliveryRefused):
        async with conn.begin_nested():
            await admin.make_invitation(conn, ACTOR, "7d", _mailing("pal@example.org", Refusing()))
    await _nothing_made(conn)
