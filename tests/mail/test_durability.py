"""Nothing is lost, nothing is doubled: smarthost failures answer 451 or 550 and count nothing."""

from __future__ import annotations

import smtplib

import pytest

from tests.mail.conftest import Masks, Sink, counts, message, send_async

pytestmark = pytest.mark.anyio
ZERO = counts()


async def data_error(port: int, rcpt: str, data: bytes) -> tuple[int, bytes]:
    with pytest.raises(smtplib.SMTPDataError) as caught:
        await send_async(port, "alice@example.com", [rcpt], data)
    text = caught.value.smtp_error
    return caught.value.smtp_code, text if isinstance(text, bytes) else text.encode()


async def test_smarthost_down_then_back_delivers_exactly_once(
    relay: int, sink: Sink, masks: Masks
) -> None:
    mask = await masks.make()
    data = message(to=mask.address)
    sink.stop()
    code, text = await data_error(relay, mask.address, data)
    assert (code, text[:5]) == (451, b"4.4.1")
    assert await mask.counters() == ZERO
    sink.start()
    # The client retries the same message, as an MTA's queue would.
    assert await send_async(relay, "alice@example.com", [mask.address], data) == {}
    assert len(sink.messages) == 1
    assert await mask.counters() == counts(forwarded=1)


@pytest.mark.parametrize(
    ("smarthost_says", "we_say"),
    [
        ("451 4.3.0 try later", 451),
        ("421 4.3.2 shutting down", 451),
        ("550 5.1.1 no such mailbox", 550),
        ("554 5.7.1 rejected", 550),
    ],
)
async def test_smarthost_errors_map_and_count_nothing(
    relay: int, sink: Sink, masks: Masks, smarthost_says: str, we_say: int
) -> None:
    mask = await masks.make()
    spam = await masks.make()
    sink.handler.reply = smarthost_says
    code, _ = await data_error(relay, mask.address, message(to=mask.address))
    assert code == we_say
    spam_data = message(to=spam.address, extra="X-Spam-Flag: YES\r\n")
    code, _ = await data_error(relay, spam.address, spam_data)
    assert code == we_say
    assert await mask.counters() == ZERO
    assert await spam.counters() == ZERO
    sink.handler.reply = None
    await send_async(relay, "alice@example.com", [spam.address], spam_data)
    assert await spam.counters() == counts(forwarded=1, spam=1)
