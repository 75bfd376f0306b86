"""A relay subdomain through a real Postfix configured as docs/postfix.md says: mail to a
local part that does not exist yet is accepted in the sender's session and forwarded."""

from __future__ import annotations

import smtplib

import pytest

from tests.e2e.conftest import Deployment, Front
from tests.e2e.test_postfix import DOMAIN, OWNER, wait_for_mail
from tests.sink import HOST, Sink

pytestmark = pytest.mark.slow


def test_first_mail_to_a_subdomain_through_postfix(
    deployment: Deployment, sink: Sink, front: Front
) -> None:
    key = deployment.user_with_key(OWNER)
    with front.postfix(key=key) as run:
        api, log = run.api, run.log
        claimed = api.post("/v3/relay/subdomains", json={"subdomain": "pfsub"})
        assert claimed.status_code == 200, claimed.text
        address = f"newshop@pfsub.{DOMAIN}"
        data = (
            f"From: Shop <news@sender.example>\r\nTo: {address}\r\nSubject: welcome\r\n"
            "Message-ID: <pf-sub-1@sender.example>\r\n\r\nWelcome.\r\n"
        ).encode()
        with smtplib.SMTP(HOST, run.ports.inbound, timeout=30) as client:
            assert client.sendmail("news@sender.example", [address], data) == {}
            # Another subdomain nobody holds: refused in the session, nothing made.
            with pytest.raises(smtplib.SMTPRecipientsRefused) as caught:
                client.sendmail("news@sender.example", [f"x@nobody.{DOMAIN}"], data)
        arrived = wait_for_mail(sink, 1)
        assert len(arrived) == 1, log.read_text()
        listed = api.get("/v3/relay/addresses").json()

    assert caught.value.recipients[f"x@nobody.{DOMAIN}"][0] == 550
    assert [m.rcpt_tos for m in arrived] == [[OWNER]]
    [made] = listed
    assert made["full_address"] == address and made["subdomain"] == "pfsub"
    assert made["description"] == "first mail from news@sender.example"
    assert made["num_forwarded"] == 1
