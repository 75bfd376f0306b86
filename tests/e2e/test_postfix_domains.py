"""A custom domain through a real Postfix configured as docs/postfix.md says (issue 16
item 4): refused while unverified; once verified, mail to it is accepted in the
sender's session, made on first mail and forwarded, sent and DKIM-signed at the domain."""

from __future__ import annotations

import smtplib

import dkim
import dns.message
import dns.query
import pytest

from tests.dns_server import running_dns
from tests.e2e.conftest import Deployment, Front
from tests.e2e.test_postfix import OWNER, wait_for_mail
from tests.sink import HOST, Sink

pytestmark = pytest.mark.slow

OWN = "own.example"


def _publish(zone: dict[str, list[tuple[str, str]]], records: list[dict[str, object]]) -> None:
    for record in records:
        value = str(record["value"])
        if record["type"] == "MX":
            text = f"{record['priority']} {value}."
        else:
            text = " ".join(f'"{value[i : i + 200]}"' for i in range(0, len(value), 200))
        zone.setdefault(f"{record['name']}.", []).append((str(record["type"]), text))


def test_a_custom_domain_through_postfix(deployment: Deployment, sink: Sink, front: Front) -> None:
    key = deployment.user_with_key(OWNER)
    zone: dict[str, list[tuple[str, str]]] = {}
    with (
        running_dns(zone) as dns_port,
        front.postfix(key=key, env={"MASKMAIL_DNS_RESOLVER": f"127.0.0.1:{dns_port}"}) as run,
    ):
        api = run.api
        added = api.post("/v3/relay/domains", json={"domain": OWN})
        assert added.status_code == 200, added.text
        data = (
            f"From: Shop <news@sender.example>\r\nTo: hello@{OWN}\r\nSubject: welcome\r\n"
            "Message-ID: <pf-own-1@sender.example>\r\n\r\nWelcome.\r\n"
        ).encode()
        # Not verified yet: Postfix does not relay for it. (Another local part than the
        # one below: smtpd remembers its last address's answer for a little while.)
        with (
            smtplib.SMTP(HOST, run.ports.inbound, timeout=30) as client,
            pytest.raises(smtplib.SMTPRecipientsRefused) as early,
        ):
            client.sendmail("news@sender.example", [f"early@{OWN}"], data)
        _publish(zone, added.json()["records"])
        checked = api.post(f"/v3/relay/domains/{added.json()['id']}/check").json()
        assert checked["verified"] and all(checked["checks"].values()), checked
        with smtplib.SMTP(HOST, run.ports.inbound, timeout=30) as client:
            assert client.sendmail("news@sender.example", [f"hello@{OWN}"], data) == {}
            # A host below the domain is not relayed.
            with pytest.raises(smtplib.SMTPRecipientsRefused) as below:
                client.sendmail("news@sender.example", [f"x@shop.{OWN}"], data)
        arrived = wait_for_mail(sink, 1)
        assert len(arrived) == 1, run.log.read_text()
        listed = api.get("/v3/relay/addresses").json()
        # The signature, checked against the key the test DNS server publishes.
        verifier = dkim.DKIM(arrived[0].data)
        signed = verifier.verify(dnsfunc=lambda name, timeout=5: _txt(dns_port, name))

    assert early.value.recipients[f"early@{OWN}"][0] == 554
    assert below.value.recipients[f"x@shop.{OWN}"][0] == 554
    [made] = listed
    assert made["full_address"] == f"hello@{OWN}" and made["num_forwarded"] == 1
    [got] = arrived
    assert got.rcpt_tos == [OWNER]
    assert got.mail_from.startswith("bounce+") and got.mail_from.endswith(f"@{OWN}")

    assert signed and verifier.domain == OWN.encode()


def _txt(port: int, name: bytes) -> bytes:
    answer = dns.query.udp(dns.message.make_query(name.decode(), "TXT"), HOST, port=port, timeout=5)
    return b"".join(b"".join(r.strings) for rrset in answer.answer for r in rrset)
