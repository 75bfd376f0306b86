"""Bounces over real SMTP: DSNs for real forwards are recorded, forged ones refused, and
enough hard ones pause the address, as the API shows. Nothing is ever sent back."""

from __future__ import annotations

import asyncio
import smtplib
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from maskmail.config import Settings, load_bounce_secret
from maskmail.core.bounce_addresses import DAY, bounce_address
from tests.mail.conftest import (
    DOMAIN,
    HOST,
    Mask,
    Masks,
    Sink,
    counts,
    mail_settings,
    message,
    send,
    send_async,
    session,
)

pytestmark = pytest.mark.anyio
FIXTURES = Path(__file__).with_name("fixtures")
THRESHOLD = 3
HARD_FIXTURES = {
    "dsn-postfix-hard.eml": "5.1.1",
    "dsn-gmail-hard.eml": "5.1.1",
    "bounce-exim-text.eml": "failed",
}


@pytest.fixture
def settings(database_url: str, tmp_path: Path, sink: Sink) -> Settings:
    return mail_settings(
        database_url,
        tmp_path,
        smarthost=f"{HOST}:{sink.port}",
        bounce_pause_threshold=THRESHOLD,
    )


def dsn(name: str, *, bounce: str, mask: Mask) -> bytes:
    """A fixture DSN, as the owner's provider would send it for this forward."""
    text = (FIXTURES / name).read_text()
    for placeholder, value in (
        ("{{BOUNCE}}", bounce),
        ("{{OWNER}}", mask.owner),
        ("{{RELAY}}", mask.address),
    ):
        text = text.replace(placeholder, value)
    return text.replace("\n", "\r\n").encode()


async def bounce_back(
    relay: int, bounce: str, mask: Mask, name: str = "dsn-postfix-hard.eml", sender: str = ""
) -> None:
    """Send the fixture DSN ``name`` to the bounce address; it must be accepted."""
    assert await send_async(relay, sender, [bounce], dsn(name, bounce=bounce, mask=mask)) == {}


async def forward(relay: int, sink: Sink, mask: Mask) -> str:
    """Have maskmail forward one message; the bounce address its envelope carried."""
    before = len(sink.messages)
    refused = await send_async(relay, "alice@example.com", [mask.address], message(to=mask.address))
    assert refused == {}
    got = sink.messages[before]
    assert got.rcpt_tos == [mask.owner]
    assert got.mail_from.startswith("bounce+") and got.mail_from.endswith(f"@{DOMAIN}")
    return got.mail_from


async def report(mask: Mask) -> dict[str, Any]:
    response = await mask.api.get(
        f"/v3/relay/addresses/{mask.address_id}/bounces", headers=mask.headers
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def address(mask: Mask) -> dict[str, Any]:
    response = await mask.api.get(f"/v3/relay/addresses/{mask.address_id}", headers=mask.headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.parametrize("name", sorted(HARD_FIXTURES))
@pytest.mark.parametrize("sender", ["", "MAILER-DAEMON@mx1.mailhost.example"])
async def test_a_real_dsn_is_recorded_and_nothing_is_sent(
    relay: int, sink: Sink, masks: Masks, name: str, sender: str
) -> None:
    mask = await masks.make()
    bounce = await forward(relay, sink, mask)
    await bounce_back(relay, bounce, mask, name, sender)
    got = await report(mask)
    assert got["paused"] is False and got["paused_time"] is None
    assert got["threshold"] == THRESHOLD
    assert got["hard_bounces_24h"] == 1
    [entry] = got["bounces"]
    assert (entry["kind"], entry["status"], entry["forgiven"]) == (
        "hard",
        HARD_FIXTURES[name],
        False,
    )
    assert abs(entry["received_time"] - time.time()) < 600
    # No backscatter, no forward of the bounce: the smarthost saw only the first message.
    assert len(sink.messages) == 1
    assert await mask.counters() == counts(forwarded=1)
    assert (await address(mask))["enabled"] is True


def _forged(bounce: str) -> str:
    local, _, domain = bounce.rpartition("@")
    last = "0" if local[-1] != "0" else "1"
    return f"{local[:-1]}{last}@{domain}"


def _other_id(bounce: str, other_id: int) -> str:
    local, _, domain = bounce.rpartition("@")
    _, day, signature = local.removeprefix("bounce+").split(".")
    return f"bounce+{other_id}.{day}.{signature}@{domain}"


async def test_forged_tampered_and_expired_bounces_are_refused(
    relay: int, sink: Sink, masks: Masks, settings: Settings
) -> None:
    mask = await masks.make()
    other = await masks.make()
    bounce = await forward(relay, sink, mask)
    secret = load_bounce_secret(settings)
    now = int(time.time())
    candidates = [
        _forged(bounce),
        _other_id(bounce, other.address_id),
        bounce_address(mask.address_id, now - 8 * DAY, secret, DOMAIN),
        bounce_address(mask.address_id, now + 2 * DAY, secret, DOMAIN),
        bounce_address(mask.address_id, now, b"not our secret", DOMAIN),
        f"bounce+{mask.address_id}@{DOMAIN}",
    ]
    for candidate in candidates:
        data = dsn("dsn-postfix-hard.eml", bounce=candidate, mask=mask)
        with pytest.raises(smtplib.SMTPRecipientsRefused) as caught:
            await send_async(relay, "", [candidate], data)
        code, line = caught.value.recipients[candidate]
        assert (code, line) == (550, b"5.1.1 No such user here"), candidate
    for each in (mask, other):
        got = await report(each)
        assert got["bounces"] == [] and got["hard_bounces_24h"] == 0
    assert len(sink.messages) == 1


async def test_a_bounce_for_a_deleted_address_is_unknown(
    relay: int, sink: Sink, masks: Masks
) -> None:
    mask = await masks.make()
    bounce = await forward(relay, sink, mask)
    deleted = await mask.api.delete(f"/v3/relay/addresses/{mask.address_id}", headers=mask.headers)
    assert deleted.status_code == 204
    replies = await asyncio.to_thread(
        session, relay, b"MAIL FROM:<>", f"RCPT TO:<{bounce}>".encode()
    )
    assert replies[1] == (550, b"5.1.1 No such user here")


@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
async def test_threshold_pauses_and_enabling_again_lifts_it(
    relay: int, sink: Sink, masks: Masks
) -> None:
    mask = await masks.make()
    bounce = await forward(relay, sink, mask)
    for _ in range(THRESHOLD - 1):
        await bounce_back(relay, bounce, mask)
    assert (await address(mask))["enabled"] is True
    await bounce_back(relay, bounce, mask)

    paused = await address(mask)
    assert paused["enabled"] is False
    assert paused["updated_time"] is not None
    got = await report(mask)
    assert got["paused"] is True
    assert got["paused_time"] == paused["updated_time"]
    assert got["hard_bounces_24h"] == THRESHOLD
    # Forwarding is paused: mail is blocked like mail to any disabled address.
    assert (
        await send_async(relay, "alice@example.com", [mask.address], message(to=mask.address)) == {}
    )
    assert len(sink.messages) == 1
    assert await mask.counters() == counts(forwarded=1, blocked=1)

    enabled = await mask.api.patch(
        f"/v3/relay/addresses/{mask.address_id}", headers=mask.headers, json={"enabled": True}
    )
    assert enabled.status_code == 200 and enabled.json()["enabled"] is True
    got = await report(mask)
    assert (got["paused"], got["paused_time"], got["hard_bounces_24h"]) == (False, None, 0)
    assert all(entry["forgiven"] for entry in got["bounces"])
    # One more hard bounce after the pause is one, not THRESHOLD + 1.
    bounce = await forward(relay, sink, mask)
    await bounce_back(relay, bounce, mask, "dsn-gmail-hard.eml")
    assert (await address(mask))["enabled"] is True
    assert (await report(mask))["hard_bounces_24h"] == 1
    assert await mask.counters() == counts(forwarded=2, blocked=1)


async def test_soft_and_unreadable_bounces_never_pause(
    relay: int, sink: Sink, masks: Masks
) -> None:
    mask = await masks.make()
    bounce = await forward(relay, sink, mask)
    for _ in range(THRESHOLD + 1):
        await bounce_back(relay, bounce, mask, "dsn-postfix-delayed.eml")
    not_a_dsn = message(to=bounce, sender="someone@example.net", subject="out of office")
    assert await send_async(relay, "someone@example.net", [bounce], not_a_dsn) == {}
    got = await report(mask)
    assert got["paused"] is False and got["hard_bounces_24h"] == 0
    kinds = [(entry["kind"], entry["status"]) for entry in got["bounces"]]
    assert kinds == [("soft", "unknown")] + [("soft", "4.4.1")] * (THRESHOLD + 1)
    assert (await address(mask))["enabled"] is True
    assert len(sink.messages) == 1


async def test_many_dsns_at_once_count_exactly(relay: int, sink: Sink, masks: Masks) -> None:
    mask = await masks.make()
    bounce = await forward(relay, sink, mask)
    data = dsn("dsn-postfix-hard.eml", bounce=bounce, mask=mask)
    racers = 2 * THRESHOLD
    # Clients on threads of their own: the default executor is the server's to use.
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(max_workers=racers) as clients:
        results = await asyncio.gather(
            *(loop.run_in_executor(clients, send, relay, "", [bounce], data) for _ in range(racers))
        )
    assert results == [{}] * racers
    got = await report(mask)
    assert got["hard_bounces_24h"] == racers
    assert len(got["bounces"]) == racers
    assert got["paused"] is True
    # The pause happened once, at the THRESHOLD-th bounce, and stamped the address then.
    assert (await address(mask))["updated_time"] == got["paused_time"]
    assert len(sink.messages) == 1
