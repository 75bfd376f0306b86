"""The recipient stage and the envelope: every refusal is a true answer, and counts nothing."""

from __future__ import annotations

import asyncio
import logging
import smtplib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.mail.plane import mail_plane
from maskmail.store.addresses import delete_address, update_address
from maskmail.store.engine import transaction
from tests.mail.conftest import (
    DOMAIN,
    HOST,
    Masks,
    Sink,
    counts,
    mail_settings,
    message,
    send_async,
    session,
)
from tests.mail.test_smtp_address import PARSER_RAISES_ON
from tests.support import free_port

pytestmark = pytest.mark.anyio
ZERO = counts()


async def refused(port: int, rcpt: str, sender: str = "alice@example.com") -> tuple[int, bytes]:
    with pytest.raises(smtplib.SMTPRecipientsRefused) as caught:
        await send_async(port, sender, [rcpt], message(to=rcpt))
    return caught.value.recipients[rcpt]


async def test_unknown_address_is_550_511(relay: int, sink: Sink) -> None:
    code, text = await refused(relay, f"nosuchaddr@{DOMAIN}")
    assert (code, text[:5]) == (550, b"5.1.1")
    assert sink.messages == []


async def test_deleted_address_is_550_511(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    async with transaction(relay_engine) as conn:
        await delete_address(conn, mask.user_id, mask.address_id)
    code, text = await refused(relay, mask.address)
    assert (code, text[:5]) == (550, b"5.1.1")
    assert sink.messages == []


@pytest.mark.parametrize(
    "sender", ["alice@example.com", f"someone@{DOMAIN}", "", "postmaster@localhost"]
)
async def test_foreign_domain_is_never_relayed(relay: int, sink: Sink, sender: str) -> None:
    code, text = await refused(relay, "victim@example.net", sender=sender)
    assert (code, text[:5]) == (550, b"5.7.1")
    code, text = await refused(relay, f"x@sub.{DOMAIN}", sender=sender)
    assert code == 550
    assert sink.messages == []


async def test_malformed_recipient_is_501(relay: int) -> None:
    replies = await asyncio.to_thread(
        session,
        relay,
        b"MAIL FROM:<alice@example.com>",
        b"RCPT TO:<a b@relay.test>",
        b"RCPT TO:<@relay.test>",
        b"RCPT TO:<abc@relay..test>",
        b"RCPT TO:<abc@>",
    )
    assert replies[0][0] == 250
    assert [code for code, _ in replies[1:]] == [501, 501, 501, 501]


async def test_cr_lf_injection_in_mail_and_rcpt_is_501(
    relay: int, masks: Masks, sink: Sink
) -> None:
    mask = await masks.make()
    replies = await asyncio.to_thread(
        session,
        relay,
        b"MAIL FROM:<alice\r@example.com>",
        b"MAIL FROM:<alice@example.com\rRCPT TO:<x@example.net>>",
        b"MAIL FROM:<alice@example.com>",
        f"RCPT TO:<{mask.address}\r>".encode(),
        f"RCPT TO:<x\r{mask.address}>".encode(),
        # A bare LF ends aiosmtpd's command line: what is left of the address is malformed.
        f"RCPT TO:<{mask.address.replace('@', chr(10) + '@')}>".encode(),
        extra_replies=1,
    )
    codes = [code for code, _ in replies]
    assert codes[:2] == [501, 501]
    assert codes[2] == 250
    assert codes[3:6] == [501, 501, 501]
    assert codes[6] == 500  # the rest of the split line is no command
    assert sink.messages == []
    assert await mask.counters() == ZERO


async def test_an_argument_the_parser_breaks_on_is_501_and_the_session_goes_on(
    relay: int, masks: Masks, sink: Sink, caplog: pytest.LogCaptureFixture
) -> None:
    mask = await masks.make()
    commands = []
    for arg in PARSER_RAISES_ON:
        commands += [
            f"MAIL FROM:{arg}".encode(),
            b"MAIL FROM:<alice@example.com>",
            f"RCPT TO:{arg}".encode(),
            f"RCPT TO:<{mask.address}>".encode(),
            b"RSET",
        ]
    with caplog.at_level(logging.ERROR):
        replies = await asyncio.to_thread(session, relay, *commands)
    codes = [code for code, _ in replies]
    assert codes == [501, 250, 501, 250, 250] * len(PARSER_RAISES_ON)
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert sink.messages == []


async def test_second_relay_recipient_gets_452_and_the_first_is_delivered(
    relay: int, sink: Sink, masks: Masks
) -> None:
    first, second = await masks.make(), await masks.make()
    result = await send_async(
        relay, "alice@example.com", [first.address, second.address], message(to=first.address)
    )
    assert result[second.address][0] == 452
    assert result[second.address][1].startswith(b"4.5.3")
    assert [m.rcpt_tos for m in sink.messages] == [[first.owner]]
    assert (await first.counters())["num_forwarded"] == 1
    assert await second.counters() == ZERO
    # The client retries the deferred recipient in its own transaction.
    await send_async(relay, "alice@example.com", [second.address], message(to=second.address))
    assert (await second.counters())["num_forwarded"] == 1


async def test_unknown_second_recipient_gets_its_own_true_answer(
    relay: int, sink: Sink, masks: Masks
) -> None:
    mask = await masks.make()
    result = await send_async(
        relay, "alice@example.com", [mask.address, f"ghost@{DOMAIN}"], message(to=mask.address)
    )
    assert result[f"ghost@{DOMAIN}"][0] == 550


LIMIT = 4096


@pytest.fixture
async def small_relay(
    database_url: str, tmp_path: Path, sink: Sink, relay_engine: AsyncEngine
) -> AsyncIterator[int]:
    settings = mail_settings(
        database_url, tmp_path, smarthost=f"{HOST}:{sink.port}", max_message_size=LIMIT
    )
    port = free_port()
    async with mail_plane(settings, relay_engine, host=HOST, port=port):
        yield port


async def test_oversized_message_is_552_and_counts_nothing(
    small_relay: int, sink: Sink, masks: Masks
) -> None:
    mask = await masks.make()
    big = message(to=mask.address) + (b"y" * 70 + b"\r\n") * (LIMIT // 70)
    # smtplib declares SIZE, so the refusal comes at MAIL.
    with pytest.raises(smtplib.SMTPSenderRefused) as caught:
        await send_async(small_relay, "alice@example.com", [mask.address], big)
    assert caught.value.smtp_code == 552
    # A client that declares nothing is refused after DATA.
    replies = await asyncio.to_thread(
        session,
        small_relay,
        b"MAIL FROM:<alice@example.com>",
        f"RCPT TO:<{mask.address}>".encode(),
        b"DATA",
        big + b".",
    )
    assert [code for code, _ in replies] == [250, 250, 354, 552]
    assert sink.messages == []
    assert await mask.counters() == ZERO
    # Under the limit, the same session shape delivers.
    await send_async(small_relay, "alice@example.com", [mask.address], message(to=mask.address))
    assert len(sink.messages) == 1


async def test_an_address_deleted_or_disabled_after_rcpt_is_looked_up_again_at_data(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    gone, off = await masks.make(), await masks.make()
    # Connecting reads the banner: not on the loop the server runs on.
    client = await asyncio.to_thread(smtplib.SMTP, HOST, relay, timeout=30)
    try:
        await asyncio.to_thread(client.ehlo, "client.example.com")
        replies = []
        for mask in (gone, off):
            await asyncio.to_thread(client.mail, "alice@example.com")
            assert (await asyncio.to_thread(client.rcpt, mask.address))[0] == 250
            async with transaction(relay_engine) as conn:
                if mask is gone:
                    await delete_address(conn, mask.user_id, mask.address_id)
                else:
                    await update_address(conn, mask.user_id, mask.address_id, {"enabled": False})
            replies.append(await asyncio.to_thread(client.data, message(to=mask.address)))
    finally:
        await asyncio.to_thread(client.quit)
    assert (replies[0][0], replies[0][1][:5]) == (550, b"5.1.1")
    assert replies[1][0] == 250
    assert sink.messages == []
    assert await off.counters() == counts(blocked=1)
