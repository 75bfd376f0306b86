"""Through a real Postfix set up as docs/postfix.md prints it: what maskmail would refuse
is refused in the sender's own session, nothing is bounced, and verdict headers from
outside are not believed."""

from __future__ import annotations

import smtplib
import time
from email import message_from_bytes, policy
from email.utils import formatdate

import pytest

from maskmail.core.bounce_addresses import bounce_address
from tests.e2e.conftest import Deployment, Front
from tests.e2e.test_postfix import wait_for_mail
from tests.postfix import queue
from tests.sink import HOST, Sink

pytestmark = pytest.mark.slow
DOMAIN = "relay.test"  # the deployment fixture's domain
OWNERS_DOMAIN = "owners.example"
OWNER = f"owner@{OWNERS_DOMAIN}"
SHOP = "orders@shop.example"


def refusal(port: int, sender: str, recipient: str) -> tuple[int, bytes]:
    """Postfix's answer to RCPT; the message must be refused there."""
    data = f"From: {sender or 'MAILER-DAEMON'}\r\nTo: {recipient}\r\n\r\nhi\r\n".encode()
    with (
        smtplib.SMTP(HOST, port, timeout=30) as client,
        pytest.raises(smtplib.SMTPRecipientsRefused) as caught,
    ):
        client.sendmail(sender, [recipient], data)
    return caught.value.recipients[recipient]


def test_refused_in_session_and_nothing_bounced(
    deployment: Deployment, sink: Sink, front: Front
) -> None:
    key = deployment.user_with_key(OWNER)
    with front.postfix(
        key=key,
        outside_domains=("shop.example", "sender.example", "stranger.example"),
    ) as run:
        api, log, port = run.api, run.log, run.ports.inbound
        created = api.post("/v3/relay/addresses").json()
        address = created["full_address"]
        alias = api.post(
            f"/v3/relay/addresses/{created['id']}/contacts", json={"email": SHOP}
        ).json()["reverse_alias"]
        local, _, domain = alias.partition("@")
        unknown_alias = f"{local[:-1]}{'b' if local[-1] != 'b' else 'c'}@{domain}"
        forged_bounce = bounce_address(created["id"], int(time.time()), b"guessed", DOMAIN)
        refused = {
            "unknown address": refusal(port, "alice@sender.example", f"nosuchaddr@{DOMAIN}"),
            "unknown alias": refusal(port, OWNER, unknown_alias),
            "forged bounce": refusal(port, "", forged_bounce),
            "stranger": refusal(port, "mallory@stranger.example", alias),
        }
        # A forged verdict on a forward, and a forged failing result on the owner's
        # reply: believed, the first would be counted as spam, the second refused.
        forward = (
            f"From: Alice <alice@sender.example>\r\nTo: {address}\r\nSubject: deal\r\n"
            f"Date: {formatdate()}\r\nMessage-ID: <deal-1@sender.example>\r\n"
            "X-Spam-Flag: YES\r\nX-Spam: Yes\r\nX-Spamd-Result: default: True [20.0 / 15.0]\r\n"
            "\r\nNot spam at all.\r\n"
        ).encode()
        reply = (
            f"Authentication-Results: mx.{DOMAIN}; spf=fail smtp.mailfrom={OWNER}\r\n"
            f"From: Owner <{OWNER}>\r\nTo: {alias}\r\nSubject: my order\r\n"
            f"Date: {formatdate()}\r\nMessage-ID: <order-1@owners.example>\r\n"
            "\r\nWhere is it?\r\n"
        ).encode()
        with smtplib.SMTP(HOST, port, timeout=30) as client:
            assert client.sendmail("alice@sender.example", [address], forward) == {}
            assert client.sendmail(OWNER, [alias], reply) == {}
        arrived = wait_for_mail(sink, 2)
        time.sleep(1)  # nothing more may arrive: no bounce to anyone
        left = queue(log)
        counters = api.get(f"/v3/relay/addresses/{created['id']}").json()
        log_text = log.read_text()

    for what, (code, text) in refused.items():
        assert code == 550, (what, text)
    assert refused["unknown address"][1].startswith(b"5.1.1"), refused
    assert refused["unknown alias"][1].startswith(b"5.1.1"), refused
    assert refused["forged bounce"][1].startswith(b"5.1.1"), refused
    assert refused["stranger"][1].startswith(b"5.7.1"), refused
    assert len(arrived) == 2, log_text
    assert left == [], left
    assert not [m for m in sink.messages if m.mail_from in ("", "<>")], "a bounce was sent"
    by_recipient = {tuple(m.rcpt_tos): m for m in arrived}
    assert by_recipient.keys() == {(OWNER,), (SHOP,)}
    forwarded = message_from_bytes(by_recipient[(OWNER,)].data, policy=policy.default)
    assert forwarded["X-Spam-Flag"] is None
    assert counters["num_spam"] == 0 and counters["num_forwarded"] == 1
    assert counters["num_replied"] == 1
