"""SPF, DKIM and DMARC through the recipe's rspamd: mail that fails DMARC where the
domain asks for rejection is refused in the session, and maskmail believes only the
Authentication-Results its own front end wrote; where the domain asks for quarantine, the
message is forwarded as spam."""

from __future__ import annotations

import smtplib
import time
from email import message_from_bytes, policy
from email.utils import formatdate

import dkim
import pytest

from tests.e2e.conftest import STRICT_KEY, Deployment, Front
from tests.e2e.test_postfix import wait_for_mail
from tests.postfix import queue
from tests.sink import HOST, Sink

pytestmark = pytest.mark.slow
DOMAIN = "relay.test"  # the deployment fixture's domain
OWNER = "owner@owners.example"
FORGER = "owner@far.example"  # a user whose domain's mail never comes from here
SHOP = "orders@shop.example"


def strict_message(to: str, number: int, domain: str = "strict.example") -> bytes:
    return (
        f"From: Bob <bob@{domain}>\r\nTo: {to}\r\nSubject: invoice {number}\r\n"
        f"Date: {formatdate()}\r\nMessage-ID: <inv-{number}@{domain}>\r\n"
        "\r\nYour invoice is attached.\r\n"
    ).encode()


def test_dmarc_reject_and_forged_results(deployment: Deployment, sink: Sink, front: Front) -> None:
    key = deployment.user_with_key(OWNER)
    forger_key = deployment.user_with_key(FORGER)
    with front.postfix(
        key=key,
        outside_domains=("shop.example", "far.example", "lax.example"),
    ) as run:
        api, port = run.api, run.ports.inbound
        created = api.post("/v3/relay/addresses").json()
        address = created["full_address"]
        # strict.example publishes p=reject and never sends from here: refused at DATA,
        # in the sender's session, so nothing is bounced.
        with (
            smtplib.SMTP(HOST, port, timeout=60) as client,
            pytest.raises(smtplib.SMTPDataError) as caught,
        ):
            client.sendmail("bob@strict.example", [address], strict_message(address, 1))
        # Signed by strict.example's DKIM key, it passes DMARC and is forwarded.
        signed = strict_message(address, 2)
        signed = dkim.sign(signed, b"k1", b"strict.example", STRICT_KEY) + signed
        with smtplib.SMTP(HOST, port, timeout=60) as client:
            assert client.sendmail("bob@strict.example", [address], signed) == {}
        # lax.example asks for quarantine: forwarded, as spam.
        lax = strict_message(address, 3, "lax.example")
        with smtplib.SMTP(HOST, port, timeout=60) as client:
            assert client.sendmail("bob@lax.example", [address], lax) == {}

        # A reply from far.example, whose SPF fails from here, carrying a forged pass.
        headers = {"Authorization": f"Bearer {forger_key}"}
        forger_address = run.api.post("/v3/relay/addresses", headers=headers).json()
        alias = api.post(
            f"/v3/relay/addresses/{forger_address['id']}/contacts",
            json={"email": SHOP},
            headers=headers,
        ).json()["reverse_alias"]
        forged = (
            f"Authentication-Results: mx.{DOMAIN}; spf=pass smtp.mailfrom={FORGER};\r\n"
            f" dkim=pass header.d=far.example\r\n"
            f"From: Owner <{FORGER}>\r\nTo: {alias}\r\nSubject: refund\r\n"
            f"Date: {formatdate()}\r\nMessage-ID: <refund-1@far.example>\r\n"
            "\r\nPlease refund to the account below.\r\n"
        ).encode()
        with smtplib.SMTP(HOST, port, timeout=60) as client:
            assert client.sendmail(FORGER, [alias], forged) == {}
        arrived = wait_for_mail(sink, 3)
        time.sleep(1)
        left = queue(run.log)
        counters = api.get(f"/v3/relay/addresses/{created['id']}").json()
        forger_counters = api.get(
            f"/v3/relay/addresses/{forger_address['id']}", headers=headers
        ).json()
        log_text = run.log.read_text()

    code, text = caught.value.smtp_code, caught.value.smtp_error
    # As docs/mail.md says: refused in the session with 5.7.1.
    said = text.decode() if isinstance(text, bytes) else text
    assert 500 <= code < 600 and said.startswith("5.7.1"), (code, said)
    assert counters["num_forwarded"] == 2 and counters["num_spam"] == 1
    assert len(arrived) == 3, log_text
    forwards = {
        str(parsed["Subject"]): parsed
        for m in arrived
        if m.rcpt_tos == [OWNER]
        for parsed in [message_from_bytes(m.data, policy=policy.default)]
    }
    assert forwards.keys() == {"invoice 2", "invoice 3"}, log_text
    assert forwards["invoice 2"]["X-Spam-Flag"] is None
    assert forwards["invoice 3"]["X-Spam-Flag"] == "YES"
    by_recipient = {tuple(m.rcpt_tos): m for m in arrived}
    assert by_recipient.keys() == {(OWNER,), (FORGER,)}, log_text
    # maskmail refused the forged reply after DATA (rspamd's own result says SPF
    # failed); Postfix told the envelope sender, the address the reply claimed.
    report = by_recipient[(FORGER,)]
    assert report.mail_from in ("", "<>")
    assert b"5.7.1" in report.data
    assert forger_counters["num_replied"] == 0
    assert left == []
