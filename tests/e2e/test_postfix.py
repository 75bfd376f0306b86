"""End to end through a real Postfix configured as docs/postfix.md says."""

from __future__ import annotations

import re
import smtplib
import time
from email import message_from_bytes, policy
from email.utils import getaddresses

import dkim
import pytest

from tests.e2e.conftest import Deployment, Front
from tests.postfix import queue
from tests.sink import HOST, Received, Sink

pytestmark = pytest.mark.slow
DOMAIN = "relay.test"  # the deployment fixture's domain
OWNERS_DOMAIN = "owners.example"
OWNER = f"owner@{OWNERS_DOMAIN}"
DELIVERY_TIMEOUT = 60


def wait_for_mail(sink: Sink, count: int) -> list[Received]:
    deadline = time.monotonic() + DELIVERY_TIMEOUT
    while time.monotonic() < deadline:
        if len(sink.messages) >= count:
            return sink.messages
        time.sleep(0.2)
    return sink.messages


def test_mail_through_postfix_is_rewritten_signed_and_counted(
    deployment: Deployment, sink: Sink, front: Front
) -> None:
    key = deployment.user_with_key(OWNER)
    with front.postfix(key=key) as run:
        # The key the doc's `maskmail dkim generate` made, and its DNS record.
        record = "".join(re.findall(r'"([^"]*)"', run.printed[0])).encode()
        api, log = run.api, run.log
        created = api.post("/v3/relay/addresses").json()
        address = created["full_address"]
        with smtplib.SMTP(HOST, run.ports.inbound, timeout=30) as client:
            data = (
                f"From: Alice Example <alice@sender.example>\r\nTo: {address}\r\n"
                "Subject: through postfix\r\nMessage-ID: <pf-1@sender.example>\r\n"
                "\r\nHello through Postfix.\r\n"
            ).encode()
            assert client.sendmail("alice@sender.example", [address], data) == {}
            # Postfix in front never relays for a foreign domain, whatever the sender.
            with pytest.raises(smtplib.SMTPRecipientsRefused) as caught:
                client.sendmail(f"x@{DOMAIN}", ["victim@foreign.example"], data)
            code, text = caught.value.recipients["victim@foreign.example"]
            assert code == 554 and b"5.7.1" in text
        arrived = wait_for_mail(sink, 1)
        assert len(arrived) == 1, log.read_text()
        counters = api.get(f"/v3/relay/addresses/{created['id']}").json()

    [got] = arrived
    assert got.rcpt_tos == [OWNER]
    assert got.mail_from.startswith("bounce+") and got.mail_from.endswith(f"@{DOMAIN}")
    forwarded = message_from_bytes(got.data, policy=policy.default)
    [(display, sender)] = getaddresses([str(forwarded["From"])])
    assert sender == address
    assert "alice@sender.example" in display
    assert str(forwarded["Reply-To"]).startswith("r.")
    assert forwarded["Subject"] == "through postfix"
    assert dkim.verify(got.data, dnsfunc=lambda name, timeout=5: record)
    assert counters["num_forwarded"] == 1


def _send(port: int, sender: str, recipient: str, data: bytes) -> None:
    with smtplib.SMTP(HOST, port, timeout=30) as client:
        assert client.sendmail(sender, [recipient], data) == {}


def test_replies_and_contacts_through_postfix(
    deployment: Deployment, sink: Sink, front: Front
) -> None:
    """The whole loop through Postfix in front: a forward, the owner's reply, a stranger
    refused by Postfix in their own session with maskmail's answer (no bounce), and a
    first message to a contact made through the API."""
    key = deployment.user_with_key(OWNER)
    outside = ("sender.example", "stranger.example", "shop.example")
    with front.postfix(
        key=key,
        outside_domains=outside,
    ) as run:
        api, log, ports = run.api, run.log, run.ports
        created = api.post("/v3/relay/addresses").json()
        address = created["full_address"]
        first = (
            f"From: Alice <alice@sender.example>\r\nTo: {address}\r\nSubject: hi\r\n"
            "Message-ID: <pf-2@sender.example>\r\n\r\nHello.\r\n"
        ).encode()
        _send(ports.inbound, "alice@sender.example", address, first)
        [forward] = wait_for_mail(sink, 1)
        alias = str(message_from_bytes(forward.data, policy=policy.default)["Reply-To"])

        reply = (
            f"From: Owner <{OWNER}>\r\nTo: {alias}\r\nSubject: Re: hi\r\n"
            "Message-ID: <pf-3@owners.example>\r\nIn-Reply-To: <pf-2@sender.example>\r\n"
            "References: <pf-2@sender.example>\r\n\r\n"
            f"Hello back.\r\n\r\nOn Monday <{OWNER.upper()}> wrote:\r\n> Hello.\r\n"
        ).encode()
        _send(ports.inbound, OWNER, alias, reply)
        stranger = reply.replace(OWNER.encode(), b"mallory@stranger.example")
        with (
            smtplib.SMTP(HOST, ports.inbound, timeout=30) as client,
            pytest.raises(smtplib.SMTPRecipientsRefused) as caught,
        ):
            client.sendmail("mallory@stranger.example", [alias], stranger)
        contact = api.post(
            f"/v3/relay/addresses/{created['id']}/contacts",
            json={"email": "orders@shop.example"},
        ).json()
        hello = (
            f"From: {OWNER}\r\nTo: {contact['reverse_alias']}\r\nSubject: my order\r\n"
            f"\r\nWhere is it? {OWNER}\r\n"
        ).encode()
        _send(ports.inbound, OWNER, contact["reverse_alias"], hello)
        arrived = wait_for_mail(sink, 3)
        assert len(arrived) == 3, log.read_text()
        time.sleep(1)  # nothing more may arrive: no second copy, no bounce to Mallory
        left = queue(log)
        counters = api.get(f"/v3/relay/addresses/{created['id']}").json()

    # Postfix refused Mallory in her own session, with maskmail's answer.
    code, text = caught.value.recipients[alias]
    assert code == 550 and text.startswith(b"5.7.1 "), text
    assert text.endswith(b"Only the owner of this relay address may send through it"), text
    assert left == []
    by_recipient = {tuple(m.rcpt_tos): m for m in sink.messages}
    assert len(by_recipient) == 3
    answered = by_recipient[("alice@sender.example",)]
    assert answered.mail_from == address
    assert OWNER not in answered.data.decode().lower()
    sent = message_from_bytes(answered.data, policy=policy.default)
    assert getaddresses([str(sent["From"])]) == [("", address)]
    assert sent["In-Reply-To"] == "<pf-2@sender.example>"
    assert sent["References"] == "<pf-2@sender.example>"
    assert f"<{address}> wrote" in answered.data.decode()
    shop = by_recipient[("orders@shop.example",)]
    assert shop.mail_from == address
    assert OWNER not in shop.data.decode().lower()
    assert counters["num_forwarded"] == 1
    assert counters["num_replied"] == 2
