"""Catch-all under abuse (issue 21 items 2 and 3): RCPT alone makes nothing, an address is
made only with its accepted message, each owner has a rate and a cap of addresses made
on first mail (held in the database, so across processes), and the mailboxes a
certificate authority writes to are never made."""

from __future__ import annotations

import asyncio
import secrets
import smtplib
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.core.first_mail import CERTIFICATE_MAILBOXES
from maskmail.mail.plane import mail_plane
from maskmail.store import subdomains
from maskmail.store.addresses import delete_address, list_addresses
from maskmail.store.engine import transaction
from maskmail.store.tables import first_mail_addresses
from tests.mail.conftest import DOMAIN, HOST, Sink, mail_settings, message, send_async
from tests.mail.test_custom_domains import _domain
from tests.mail.test_first_mail import Holder, _addresses, _holder
from tests.mail.test_policy import ask
from tests.support import free_port

pytestmark = pytest.mark.anyio


@dataclass
class Plane:
    smtp: int
    policy: int


PlaneFactory = Callable[..., AbstractAsyncContextManager[Plane]]


@pytest.fixture
def plane(database_url: str, tmp_path: Path, sink: Sink, relay_engine: AsyncEngine) -> PlaneFactory:
    """``async with plane(**settings)``: a mail plane with its policy service, on the
    shared database; two of them at once stand for two mail-plane processes."""

    @asynccontextmanager
    async def start(**overrides: Any) -> AsyncIterator[Plane]:
        ports = Plane(smtp=free_port(), policy=free_port())
        values: dict[str, Any] = {"smarthost": f"{HOST}:{sink.port}", **overrides}
        settings = mail_settings(database_url, tmp_path, policy_port=ports.policy, **values)
        async with mail_plane(settings, relay_engine, host=HOST, port=ports.smtp):
            yield ports

    return start


def _rcpt_only(port: int, rcpts: list[str]) -> list[int]:
    """Each recipient under a new envelope sender, then RSET: never a DATA."""
    codes = []
    with smtplib.SMTP(HOST, port, timeout=30) as client:
        client.ehlo("probe.example")
        for i, rcpt in enumerate(rcpts):
            client.mail(f"s{i}-{secrets.token_hex(3)}@probe.example")
            codes.append(client.rcpt(rcpt)[0])
            client.rset()
    return codes


async def _rcpt_line(port: int, rcpt: str, sender: str) -> str:
    """What RCPT answers, as one line."""

    def run() -> str:
        with smtplib.SMTP(HOST, port, timeout=30) as client:
            client.ehlo("probe.example")
            client.mail(sender)
            code, text = client.rcpt(rcpt)
            return f"{code} {text.decode()}"

    return await asyncio.to_thread(run)


async def _send(port: int, rcpt: str, sender: str) -> dict[str, tuple[int, bytes]]:
    return await send_async(port, sender, [rcpt], message(to=rcpt, sender=sender))


async def _marked(engine: AsyncEngine, user_id: int) -> int:
    async with engine.connect() as conn:
        found = await conn.scalar(
            select(func.count())
            .select_from(first_mail_addresses)
            .where(first_mail_addresses.c.user_id == user_id)
        )
    return int(found or 0)


async def test_rcpt_without_data_makes_no_address(
    plane: PlaneFactory, relay_engine: AsyncEngine, sink: Sink
) -> None:
    """The issue's repro, scaled down: new local parts, each under a new sender, no DATA."""
    owner = await _holder(relay_engine, "probed")
    rcpts = [f"p{i}@{owner.host}" for i in range(60)]
    async with plane() as ports:
        codes = await asyncio.to_thread(_rcpt_only, ports.smtp, rcpts)
        actions = [await ask(ports.policy, r, f"x{i}@probe.example") for i, r in enumerate(rcpts)]
    # Each would be made, so each is accepted; none is made until a message comes.
    assert codes == [250] * 60 and actions == ["DUNNO"] * 60
    assert await _addresses(relay_engine, owner.user_id) == {}
    assert await _marked(relay_engine, owner.user_id) == 0
    assert sink.messages == []


async def test_the_owners_rate_holds_across_mail_planes(
    plane: PlaneFactory, relay_engine: AsyncEngine, sink: Sink
) -> None:
    """Three an hour: two planes on one database (each with its own memory) share it."""
    owner = await _holder(relay_engine, "rated")
    other = await _holder(relay_engine, "unrated")
    async with plane(first_mail_per_hour=3) as one, plane(first_mail_per_hour=3) as two:
        for port, local in ((one.smtp, "a"), (two.smtp, "b"), (one.smtp, "c")):
            assert await _send(port, f"{local}@{owner.host}", f"{local}@shop.example") == {}
        for port in (one.smtp, two.smtp):
            line = await _rcpt_line(port, f"d@{owner.host}", "d@shop.example")
            assert line.startswith("450 4.7.1"), line
        deferred = await ask(two.policy, f"d@{owner.host}", "d@shop.example")
        assert deferred.startswith("DEFER_IF_PERMIT 4.7.1"), deferred
        # Made addresses keep taking mail, and other owners' catch-all is theirs.
        assert await _send(two.smtp, f"a@{owner.host}", "z@shop.example") == {}
        assert await _send(one.smtp, f"d@{other.host}", "d@shop.example") == {}
    assert set(await _addresses(relay_engine, owner.user_id)) == {
        f"{local}@{owner.host}" for local in "abc"
    }
    assert await _marked(relay_engine, owner.user_id) == 3
    assert len(sink.messages) == 5


async def test_the_owners_cap_counts_every_catch_all_and_frees_on_delete(
    plane: PlaneFactory, relay_engine: AsyncEngine
) -> None:
    """Two kept at most, at the subdomain and the custom domain together."""
    user_id, _, custom = await _domain(relay_engine)
    name = f"capped-{secrets.token_hex(4)}"
    async with transaction(relay_engine) as conn:
        await subdomains.claim(conn, user_id, name, domain=DOMAIN)
    host = f"{name}.{DOMAIN}"
    async with plane(first_mail_max=2, first_mail_per_hour=0) as ports:
        assert await _send(ports.smtp, f"one@{host}", "a@shop.example") == {}
        assert await _send(ports.smtp, f"two@{custom}", "b@shop.example") == {}
        for rcpt in (f"three@{custom}", f"three@{host}"):
            line = await _rcpt_line(ports.smtp, rcpt, "c@shop.example")
            assert line.startswith("450 4.7.1"), (rcpt, line)
        async with transaction(relay_engine) as conn:
            first, _ = await list_addresses(conn, user_id)
            await delete_address(conn, user_id, first.id)
        assert await _send(ports.smtp, f"three@{custom}", "c@shop.example") == {}
    assert set(await _addresses(relay_engine, user_id)) == {f"two@{custom}", f"three@{custom}"}


@pytest.mark.parametrize("reply", ["550 5.7.1 not wanted", "451 4.3.0 later"])
async def test_a_message_not_accepted_leaves_no_address(
    plane: PlaneFactory, relay_engine: AsyncEngine, sink: Sink, reply: str
) -> None:
    owner = await _holder(relay_engine, "refused")
    rcpt = f"news@{owner.host}"
    sink.handler.reply = reply
    async with plane() as ports:
        with pytest.raises(smtplib.SMTPDataError) as caught:
            await _send(ports.smtp, rcpt, "news@shop.example")
        assert caught.value.smtp_code == int(reply[:3])
        assert await _addresses(relay_engine, owner.user_id) == {}
        assert await _marked(relay_engine, owner.user_id) == 0
        # Nothing was handed out: the sender's retry makes the address.
        sink.handler.reply = None
        assert await _send(ports.smtp, rcpt, "news@shop.example") == {}
    assert await _addresses(relay_engine, owner.user_id) == {
        rcpt: "first mail from news@shop.example"
    }


@dataclass
class HeldSink:
    """A smarthost that holds every message, once it has it, until released."""

    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.arrived.set()
        await asyncio.to_thread(self.release.wait, 60)
        return "250 2.0.0 queued"


async def test_a_client_that_hangs_up_mid_delivery_leaves_no_address(
    plane: PlaneFactory, relay_engine: AsyncEngine
) -> None:
    owner = await _holder(relay_engine, "hungup")
    rcpt = f"gone@{owner.host}"
    held = HeldSink()
    smarthost = Controller(held, hostname=HOST, port=free_port())
    smarthost.start()
    try:
        # The smarthost would be waited on for far longer than this test waits: only
        # the client's hang-up can end the delivery in time.
        async with plane(smarthost=f"{HOST}:{smarthost.port}", outbound_timeout=120) as ports:
            client = socket.create_connection((HOST, ports.smtp), timeout=30)
            for line in ("EHLO probe.example", "MAIL FROM:<a@shop.example>", f"RCPT TO:<{rcpt}>"):
                client.sendall(line.encode() + b"\r\n")
            client.sendall(b"DATA\r\n" + message(to=rcpt, sender="a@shop.example") + b".\r\n")
            # Made once the message is in; the forward reaches the smarthost, which holds
            # it; then the client hangs up before the answer, and the address goes.
            assert await asyncio.to_thread(held.arrived.wait, 30)
            assert set(await _addresses(relay_engine, owner.user_id)) == {rcpt}
            client.close()
            deadline = time.monotonic() + 60
            while await _addresses(relay_engine, owner.user_id):
                assert time.monotonic() < deadline, "the address outlived its message"
                await asyncio.sleep(0.05)
            held.release.set()
            assert await _send(ports.smtp, rcpt, "a@shop.example") == {}
    finally:
        held.release.set()
        smarthost.stop()
    assert set(await _addresses(relay_engine, owner.user_id)) == {rcpt}


async def test_certificate_mailboxes_are_never_made(
    plane: PlaneFactory, relay_engine: AsyncEngine, sink: Sink
) -> None:
    owner: Holder = await _holder(relay_engine, "certs")
    user_id, _, custom = await _domain(relay_engine)
    locals_ = [*sorted(CERTIFICATE_MAILBOXES), "Admin", "WEBMASTER"]
    async with plane() as ports:
        for host in (owner.host, custom):
            for local in locals_:
                rcpt = f"{local}@{host}"
                line = await _rcpt_line(ports.smtp, rcpt, "ca@issuer.example")
                action = await ask(ports.policy, rcpt, "ca@issuer.example")
                assert line.startswith("550 5.1.1") and action == line, (rcpt, line, action)
        # A name that only starts like one is made as any other.
        assert await _send(ports.smtp, f"admin-desk@{owner.host}", "a@shop.example") == {}
    assert set(await _addresses(relay_engine, owner.user_id)) == {f"admin-desk@{owner.host}"}
    assert await _addresses(relay_engine, user_id) == {}
