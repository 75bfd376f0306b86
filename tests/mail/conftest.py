"""Mail fixtures: maskmail's real SMTP server, a sink smarthost, and the API to read counters."""

from __future__ import annotations

import asyncio
import secrets
import smtplib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.app import create_app
from maskmail.config import Settings
from maskmail.core import keys
from maskmail.mail.dkim import generate_key
from maskmail.mail.plane import mail_plane
from maskmail.store import accounts
from maskmail.store.addresses import create_address, update_address
from maskmail.store.engine import create_engine, transaction
from tests.sink import HOST as HOST  # re-exported for the mail tests
from tests.sink import Sink as Sink
from tests.support import free_port

DOMAIN = "relay.test"


def mail_settings(database_url: str, data_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "domain": DOMAIN,
        "data_dir": data_dir,
        "rate_limit": "100000/minute",
        "outbound_timeout": 10,
        **overrides,
    }
    return Settings(**values)


@pytest.fixture
def settings(database_url: str, tmp_path: Path, sink: Sink) -> Settings:
    return mail_settings(database_url, tmp_path, smarthost=f"{HOST}:{sink.port}")


@pytest.fixture
async def relay_engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url, pool_size=8)
    yield engine
    await engine.dispose()


@pytest.fixture
async def relay(settings: Settings, relay_engine: AsyncEngine) -> AsyncIterator[int]:
    """maskmail's SMTP server on a free port, in the test's event loop; yields the port."""
    port = free_port()
    async with mail_plane(settings, relay_engine, host=HOST, port=port):
        yield port


@pytest.fixture
async def signing_relay(
    database_url: str, tmp_path: Path, sink: Sink, relay_engine: AsyncEngine
) -> AsyncIterator[tuple[int, bytes]]:
    """maskmail's SMTP server signing with a new DKIM key; yields the port and the
    public key."""
    private, public = generate_key()
    (tmp_path / "dkim.key").write_bytes(private)
    settings = mail_settings(database_url, tmp_path, smarthost=f"{HOST}:{sink.port}")
    port = free_port()
    async with mail_plane(settings, relay_engine, host=HOST, port=port):
        yield port, public


def counts(
    *, forwarded: int = 0, blocked: int = 0, replied: int = 0, spam: int = 0
) -> dict[str, int]:
    """The four counters as the API shows them."""
    return {
        "num_forwarded": forwarded,
        "num_blocked": blocked,
        "num_replied": replied,
        "num_spam": spam,
    }


@dataclass
class Mask:
    """A user with one relay address, and an API client to read its counters."""

    owner: str
    address_id: int
    address: str
    user_id: int
    api: httpx.AsyncClient
    headers: dict[str, str]

    async def counters(self) -> dict[str, int]:
        response = await self.api.get(
            f"/v3/relay/addresses/{self.address_id}", headers=self.headers
        )
        assert response.status_code == 200, response.text
        body = response.json()
        return {k: body[k] for k in ("num_forwarded", "num_blocked", "num_replied", "num_spam")}


@dataclass
class Masks:
    engine: AsyncEngine
    api: httpx.AsyncClient

    async def make(
        self, *, enabled: bool = True, block_spam: bool = False, owner: str = ""
    ) -> Mask:
        """A new user (``owner``, or a random mailbox) with one relay address."""
        owner = owner or f"owner{secrets.token_hex(5)}@example.com"
        key = keys.generate_key()
        async with transaction(self.engine) as conn:
            user_id = await accounts.add_user(conn, owner)
            await accounts.add_key(conn, user_id, keys.hash_key(key))
            address = await create_address(conn, user_id, domain=DOMAIN, length=8)
            if not enabled or block_spam:
                await update_address(
                    conn, user_id, address.id, {"enabled": enabled, "block_spam": block_spam}
                )
        return Mask(
            owner=owner,
            address_id=address.id,
            address=address.full_address,
            user_id=user_id,
            api=self.api,
            headers={"Authorization": f"Bearer {key}"},
        )


@pytest.fixture
async def masks(settings: Settings, relay_engine: AsyncEngine) -> AsyncIterator[Masks]:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as api:
            yield Masks(relay_engine, api)


def message(
    *, to: str, sender: str = "alice@example.com", subject: str = "hello", extra: str = ""
) -> bytes:
    return (
        f"From: Alice Example <{sender}>\r\nTo: {to}\r\nSubject: {subject}\r\n"
        f"Message-ID: <{secrets.token_hex(8)}@example.com>\r\n{extra}"
        "\r\nHello there.\r\n"
    ).encode()


def send(
    port: int, sender: str, recipients: list[str], data: bytes
) -> dict[str, tuple[int, bytes]]:
    """Blocking: one message over one connection; raises smtplib's errors as they come."""
    with smtplib.SMTP(HOST, port, timeout=30) as client:
        return client.sendmail(sender, recipients, data)


async def send_async(
    port: int, sender: str, recipients: list[str], data: bytes
) -> dict[str, tuple[int, bytes]]:
    """smtplib blocks; run it in a thread so the server in this loop keeps serving."""
    return await asyncio.to_thread(send, port, sender, recipients, data)


def session(port: int, *commands: bytes, extra_replies: int = 0) -> list[tuple[int, bytes]]:
    """Blocking: EHLO, then raw command lines, returning each reply (and any extra ones a
    line the server split in two provoked)."""
    with smtplib.SMTP(HOST, port, timeout=30) as client:
        client.ehlo("client.example.com")
        replies = []
        for command in commands:
            client.send(command + b"\r\n")
            replies.append(client.getreply())
        replies.extend(client.getreply() for _ in range(extra_replies))
        return replies
