"""The Postfix policy service answers exactly what the SMTP handler answers at RCPT."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.config import Settings, load_bounce_secret
from maskmail.core.bounce_addresses import DAY, bounce_address
from maskmail.mail import plane, policy, recipients
from maskmail.mail.plane import mail_plane
from maskmail.mail.policy_protocol import MAX_LINE
from maskmail.store.engine import create_engine
from tests.mail.conftest import DOMAIN, HOST, Mask, Masks, mail_settings, session
from tests.support import free_port

pytestmark = pytest.mark.anyio
OUTSIDE = "orders@shop.example"


@dataclass
class Planes:
    smtp: int
    policy: int


@pytest.fixture
async def planes(settings: Settings, relay_engine: AsyncEngine) -> AsyncIterator[Planes]:
    ports = Planes(smtp=free_port(), policy=free_port())
    with_policy = settings.model_copy(update={"policy_port": ports.policy})
    async with mail_plane(with_policy, relay_engine, host=HOST, port=ports.smtp):
        yield ports


def request(recipient: str, sender: str, state: str = "RCPT") -> bytes:
    """A request as Postfix 3 sends it (most attributes left out)."""
    return (
        f"request=smtpd_access_policy\nprotocol_state={state}\nprotocol_name=ESMTP\n"
        f"client_address=192.0.2.7\nhelo_name=mx.shop.example\nqueue_id=\n"
        f"sender={sender}\nrecipient={recipient}\nrecipient_count=0\nsize=0\n\n"
    ).encode()


async def exchange(port: int, *requests: bytes) -> list[str]:
    """The actions answered to ``requests``, sent one after another on one connection."""
    reader, writer = await asyncio.open_connection(HOST, port)
    actions = []
    try:
        for one in requests:
            writer.write(one)
            await writer.drain()
            line = await asyncio.wait_for(reader.readuntil(b"\n\n"), 10)
            assert line.startswith(b"action=") and line.count(b"\n") == 2, line
            actions.append(line[len(b"action=") : -2].decode())
    finally:
        writer.close()
    return actions


async def ask(port: int, recipient: str, sender: str) -> str:
    [action] = await exchange(port, request(recipient, sender))
    return action


async def rcpt_line(port: int, recipient: str, sender: str) -> str:
    """What the SMTP handler answers to RCPT, as one line."""
    replies = await asyncio.to_thread(
        session, port, f"MAIL FROM:<{sender}>".encode(), f"RCPT TO:<{recipient}>".encode()
    )
    code, text = replies[1]
    return f"{code} {text.decode()}"


async def reverse_alias(masks: Masks, mask: Mask) -> str:
    response = await masks.api.post(
        f"/v3/relay/addresses/{mask.address_id}/contacts",
        json={"email": OUTSIDE},
        headers=mask.headers,
    )
    assert response.status_code in (200, 201), response.text
    return str(response.json()["reverse_alias"])


async def test_policy_and_rcpt_give_one_answer(
    planes: Planes, masks: Masks, settings: Settings
) -> None:
    mask = await masks.make()
    alias = await reverse_alias(masks, mask)
    local, _, domain = alias.partition("@")
    unknown_alias = f"{local[:-1]}{'b' if local[-1] != 'b' else 'c'}@{domain}"
    secret = load_bounce_secret(settings)
    now = int(time.time())
    cases = [
        (f"nosuchaddr@{DOMAIN}", "alice@example.com", "550 5.1.1"),
        (mask.address, "alice@example.com", None),
        (alias, mask.owner, None),
        (alias, "mallory@stranger.example", "550 5.7.1"),
        (alias, "", "550 5.7.1"),
        (unknown_alias, mask.owner, "550 5.1.1"),
        (bounce_address(mask.address_id, now, b"forged", DOMAIN), "", "550 5.1.1"),
        (bounce_address(mask.address_id, now, secret, DOMAIN), "", None),
        (bounce_address(mask.address_id, now - 8 * DAY, secret, DOMAIN), "", "550 5.1.1"),
    ]
    for recipient, sender, refusal in cases:
        action = await ask(planes.policy, recipient, sender)
        line = await rcpt_line(planes.smtp, recipient, sender)
        if refusal is None:
            assert (action, line[:3]) == ("DUNNO", "250"), recipient
        else:
            assert action.startswith(refusal), (recipient, sender, action)
            assert action == line, (recipient, sender)


async def test_other_questions_are_left_to_postfix(planes: Planes) -> None:
    """Other domains, other stages and other requests are not maskmail's to answer."""
    actions = await exchange(
        planes.policy,
        request("someone@example.net", "alice@example.com"),
        request(f"nosuchaddr@{DOMAIN}", "alice@example.com", state="DATA"),
        request("not an address", "alice@example.com"),
        b"request=something_else\nrecipient=nosuchaddr@relay.test\n\n",
        request(f"nosuchaddr@{DOMAIN}", "alice@example.com"),
    )
    assert actions == ["DUNNO"] * 4 + ["550 5.1.1 No such user here"]


async def read_all(reader: asyncio.StreamReader) -> bytes:
    return await asyncio.wait_for(reader.read(), 10)


@pytest.mark.parametrize(
    "data",
    [
        b"recipient=" + b"x" * (MAX_LINE * 4) + b"\n\n",
        b"not a policy request\n\n",
        b"\x00\xff\n\n",
    ],
)
async def test_a_broken_request_closes_that_connection_only(planes: Planes, data: bytes) -> None:
    reader, writer = await asyncio.open_connection(HOST, planes.policy)
    writer.write(data)
    await writer.drain()
    assert await read_all(reader) == b""  # closed, with no answer and no traceback
    writer.close()
    assert await ask(planes.policy, f"nosuchaddr@{DOMAIN}", "a@example.com") == (
        "550 5.1.1 No such user here"
    )


async def test_a_silent_client_is_let_go(settings: Settings, relay_engine: AsyncEngine) -> None:
    port = free_port()
    quick = settings.model_copy(update={"policy_port": port, "smtp_timeout": 0.3})
    async with mail_plane(quick, relay_engine, host=HOST, port=free_port()):
        reader, writer = await asyncio.open_connection(HOST, port)
        writer.write(b"request=smtpd_access_policy\n")  # then nothing more
        await writer.drain()
        started = time.monotonic()
        assert await read_all(reader) == b""
        assert time.monotonic() - started < 5
        writer.close()


async def test_store_down_defers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No database: Postfix is told to try later, never to refuse or accept."""
    url = f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/nowhere"

    # The plane reads the domains it serves once, at start (a database down then stops
    # the start); here the database went away after that.
    async def read_at_start(engine: AsyncEngine, domain: str) -> frozenset[str]:
        return frozenset()

    monkeypatch.setattr(plane, "older_domains", read_at_start)
    settings = mail_settings(url, tmp_path, policy_port=free_port())
    engine = create_engine(url, pool_size=1)
    try:
        async with mail_plane(settings, engine, host=HOST, port=free_port()):
            actions = await exchange(
                settings.policy_port,
                request(f"someaddr@{DOMAIN}", "alice@example.com"),
                request(f"r.{'a' * 24}@{DOMAIN}", "alice@example.com"),
            )
    finally:
        await engine.dispose()
    assert actions == ["DEFER_IF_PERMIT 4.3.0 Temporary failure; try again later"] * 2


async def test_an_unexpected_failure_defers_without_a_traceback(
    planes: Planes, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(*args: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(recipients, "check_may_receive", broken)
    actions = await exchange(
        planes.policy,
        request(f"someaddr@{DOMAIN}", "alice@example.com"),
        request(f"other@{DOMAIN}", "alice@example.com"),
    )
    assert actions == ["DEFER_IF_PERMIT 4.3.0 Temporary failure; try again later"] * 2
    assert "policy decision failed" in caplog.text


async def test_connections_past_the_cap_are_closed(
    planes: Planes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(policy, "MAX_CONNECTIONS", 1)
    reader, writer = await asyncio.open_connection(HOST, planes.policy)
    try:
        writer.write(request(f"nosuchaddr@{DOMAIN}", "a@example.com"))
        assert (await reader.readuntil(b"\n\n")).startswith(b"action=550 5.1.1")
        second, second_writer = await asyncio.open_connection(HOST, planes.policy)
        assert await read_all(second) == b""
        second_writer.close()
        # The first connection is still served.
        writer.write(request(f"nosuchaddr@{DOMAIN}", "a@example.com"))
        assert (await reader.readuntil(b"\n\n")).startswith(b"action=550 5.1.1")
    finally:
        writer.close()
