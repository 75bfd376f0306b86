"""Adding a mailbox and verifying it, with no HTTP: a sender, a limiter and a link maker
are handed in, as both doors hand them."""

from __future__ import annotations

import re
from email import message_from_bytes

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.config import Settings
from maskmail.core.errors import DeliveryDeferred, RateLimited
from maskmail.services.mailboxes import add_and_ask, check_code
from maskmail.store import accounts
from maskmail.store import mailboxes as store

pytestmark = pytest.mark.anyio

SETTINGS = Settings(domain="maskrelay.net")


class Recorder:
    """A sender that keeps what it was given."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes, str, str]] = []

    async def deliver(self, message: bytes, *, sender: str, recipient: str) -> None:
        self.sent.append((message, sender, recipient))

    async def close(self) -> None:
        pass


class Refusing:
    """A limiter that has had enough."""

    async def hit(self, identifier: str) -> None:
        raise RateLimited("slow down", 120)


async def test_the_message_carries_the_link_the_door_makes(conn: AsyncConnection) -> None:
    user = await accounts.add_user(conn, "owner@example.com")
    sender = Recorder()
    added = await add_and_ask(
        conn,
        SETTINGS,
        user,
        "New@Example.net",
        sender=sender,
        link_for=lambda token: f"https://door.example/verify?token={token}",
    )
    [(message, envelope_from, recipient)] = sender.sent
    assert (added.email, envelope_from, recipient) == ("New@example.net", "", "New@example.net")
    payload = message_from_bytes(message).get_payload(decode=True)
    assert isinstance(payload, bytes)
    body = payload.decode()
    assert re.search(r"https://door\.example/verify\?token=[A-Za-z0-9_-]{20,}\n", body)
    assert re.search(r"code: \d{6}", body)


async def test_no_outbound_path_adds_nothing_it_could_not_tell(conn: AsyncConnection) -> None:
    user = await accounts.add_user(conn, "owner@example.com")
    outer = await conn.begin_nested()
    with pytest.raises(DeliveryDeferred):
        await add_and_ask(
            conn, SETTINGS, user, "new@example.net", sender=None, link_for=lambda token: token
        )
    await outer.rollback()
    assert [m.email for m in await store.list_mailboxes(conn, user)] == ["owner@example.com"]


async def test_a_code_over_the_limit_is_told_when_to_try_again(conn: AsyncConnection) -> None:
    user = await accounts.add_user(conn, "owner@example.com")
    added = await add_and_ask(
        conn, SETTINGS, user, "new@example.net", sender=Recorder(), link_for=lambda token: token
    )
    with pytest.raises(RateLimited, match="try again in 2 minutes") as refused:
        await check_code(conn, user, added.id, "000000", limiter=Refusing())
    assert refused.value.retry_after == 120
