"""End to end through a real Postfix configured as docs/postfix.md says."""

from __future__ import annotations

import re
import smtplib
import time
from email import message_from_bytes, policy
from email.utils import getaddresses

import dkim
import pytest

from tests.e2e.conftest import Deployment, behind_postfix
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
    deployment: Deployment, sink: Sink
) -> None:
    record = "".join(re.findall(r'"([^"]*)"', deployment.cli("dkim", "generate"))).encode()
    key = deployment.user_with_key(OWNER)
    with behind_postfix(
        deployment, sink, key=key, domain=DOMAIN, owners_domain=OWNERS_DOMAIN
    ) as run:
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
