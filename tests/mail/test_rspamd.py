"""A real rspamd judges the GTUBE test message spam; maskmail asks it over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.mail.plane import mail_plane
from tests.mail.conftest import HOST, Masks, Sink, mail_settings, message, send_async
from tests.rspamd import running_rspamd
from tests.support import free_port

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
GTUBE = "XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X"


@pytest.fixture(scope="module")
def rspamd_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_rspamd(tmp_path_factory.mktemp("rspamd")) as url:
        yield url


@pytest.fixture
async def filtered_relay(
    database_url: str, tmp_path: Path, sink: Sink, relay_engine: AsyncEngine, rspamd_url: str
) -> AsyncIterator[int]:
    # No trusted relays: the verdict must come from rspamd itself.
    settings = mail_settings(
        database_url,
        tmp_path,
        smarthost=f"{HOST}:{sink.port}",
        rspamd_url=rspamd_url,
        trusted_relays="192.0.2.1",
    )
    port = free_port()
    async with mail_plane(settings, relay_engine, host=HOST, port=port):
        yield port


def gtube_message(to: str) -> bytes:
    return message(to=to).replace(b"Hello there.", GTUBE.encode())


async def test_gtube_is_spam(filtered_relay: int, sink: Sink, masks: Masks) -> None:
    blocking = await masks.make(block_spam=True)
    allowing = await masks.make()
    for mask in (blocking, allowing):
        await send_async(
            filtered_relay, "a@example.com", [mask.address], gtube_message(mask.address)
        )
    assert (await blocking.counters())["num_spam"] == 1
    assert (await blocking.counters())["num_forwarded"] == 0
    assert (await allowing.counters())["num_spam"] == 1
    assert (await allowing.counters())["num_forwarded"] == 1
    [got] = sink.messages
    assert got.rcpt_tos == [allowing.owner]
    assert b"X-Spam-Flag: YES\r\n" in got.data


async def test_ordinary_mail_is_not_spam(filtered_relay: int, sink: Sink, masks: Masks) -> None:
    mask = await masks.make(block_spam=True)
    await send_async(filtered_relay, "a@example.com", [mask.address], message(to=mask.address))
    assert len(sink.messages) == 1
    assert (await mask.counters())["num_spam"] == 0
