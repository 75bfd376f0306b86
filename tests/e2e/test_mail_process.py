"""The mail plane as a user runs it: `maskmail up` and `maskmail smtp` as real processes."""

from __future__ import annotations

import smtplib
import time
from email import message_from_bytes, policy
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import Deployment
from tests.sink import HOST, Sink
from tests.support import free_port, running, wait_for_port

pytestmark = pytest.mark.slow
DOMAIN = "relay.test"  # the deployment fixture's domain
OWNER = "owner@example.com"


def with_smarthost(deployment: Deployment, sink: Sink) -> dict[str, str]:
    return {**deployment.env, "MASKMAIL_SMARTHOST": f"{HOST}:{sink.port}"}


def send(port: int, rcpt: str, data: bytes) -> dict[str, tuple[int, bytes]]:
    with smtplib.SMTP(HOST, port, timeout=30) as client:
        return client.sendmail("alice@example.com", [rcpt], data)


def note(rcpt: str) -> bytes:
    return f"From: Alice <alice@example.com>\r\nTo: {rcpt}\r\nSubject: hi\r\n\r\nHi.\r\n".encode()


def test_up_serves_api_and_smtp_in_one_process(deployment: Deployment, sink: Sink) -> None:
    key = deployment.user_with_key(OWNER)
    api_port, smtp_port = free_port(), free_port()
    args = ("up", "--api-port", str(api_port), "--smtp-port", str(smtp_port))
    log = deployment.tmp / "up.log"
    with running(with_smarthost(deployment, sink), *args, port=api_port, log=log):
        wait_for_port(smtp_port)
        api = httpx.Client(
            base_url=f"http://{HOST}:{api_port}", headers={"Authorization": f"Bearer {key}"}
        )
        with api:
            created = api.post("/v3/relay/addresses").json()
            address = created["full_address"]
            assert address.endswith(f"@{DOMAIN}")
            assert send(smtp_port, address, note(address)) == {}
            with pytest.raises(smtplib.SMTPRecipientsRefused):
                send(smtp_port, "someone@example.net", note("someone@example.net"))
            api.patch(f"/v3/relay/addresses/{created['id']}", json={"enabled": False})
            assert send(smtp_port, address, note(address)) == {}
            body = api.get(f"/v3/relay/addresses/{created['id']}").json()
    assert (body["num_forwarded"], body["num_blocked"]) == (1, 1)
    [got] = sink.messages
    assert got.rcpt_tos == [OWNER]
    forwarded = message_from_bytes(got.data, policy=policy.default)
    assert str(forwarded["From"]).endswith(f"<{address}>")
    text = log.read_text()
    assert OWNER not in text and "alice@example.com" not in text


def test_smtp_command_runs_the_mail_plane_alone(deployment: Deployment, sink: Sink) -> None:
    port = free_port()
    env = with_smarthost(deployment, sink)
    log = deployment.tmp / "smtp.log"
    with running(env, "smtp", "--port", str(port), port=port, log=log) as proc:
        with pytest.raises(smtplib.SMTPRecipientsRefused) as caught:
            send(port, f"nobody@{DOMAIN}", note(f"nobody@{DOMAIN}"))
        assert caught.value.recipients[f"nobody@{DOMAIN}"][0] == 550
        with smtplib.SMTP(HOST, port, timeout=30) as client:
            code, _ = client.ehlo("client.example.com")
            assert code == 250
    assert proc.returncode == 0  # SIGTERM is a clean stop
    # The bounce secret was made once and kept in the data dir.
    assert (Path(env["MASKMAIL_DATA_DIR"]) / "bounce-secret").stat().st_size == 64


def test_up_mails_a_new_mailbox_its_link_and_forwards_to_both(
    deployment: Deployment, sink: Sink
) -> None:
    key = deployment.user_with_key(OWNER)
    api_port, smtp_port = free_port(), free_port()
    args = ("up", "--api-port", str(api_port), "--smtp-port", str(smtp_port))
    log = deployment.tmp / "up-mailboxes.log"
    with running(with_smarthost(deployment, sink), *args, port=api_port, log=log):
        wait_for_port(smtp_port)
        api = httpx.Client(
            base_url=f"http://{HOST}:{api_port}", headers={"Authorization": f"Bearer {key}"}
        )
        with api:
            added = api.post("/v3/relay/mailboxes", json={"email": "work@example.net"})
            assert added.status_code == 200, added.text
            [verification] = sink.messages
            assert verification.rcpt_tos == ["work@example.net"]
            text = message_from_bytes(verification.data, policy=policy.default)
            body = text.get_body().get_content()  # type: ignore[union-attr]
            link = next(word for word in body.split() if "/verify?token=" in word)
            assert link.startswith(f"http://{HOST}:{api_port}/v3/relay/mailboxes/verify?token=")
            # Opening the link shows a button; pressing it posts to the same address.
            assert "<button" in httpx.get(link).text
            assert "work@example.net is verified" in httpx.post(link).text
            created = api.post("/v3/relay/addresses").json()
            ids = [m["id"] for m in api.get("/v3/relay/mailboxes").json()]
            chosen = api.put(
                f"/v3/relay/addresses/{created['id']}/mailboxes", json={"mailbox_ids": ids}
            )
            assert chosen.status_code == 200
            address = created["full_address"]
            assert send(smtp_port, address, note(address)) == {}
            forwarded = api.get(f"/v3/relay/addresses/{created['id']}").json()["num_forwarded"]
    assert forwarded == 1
    assert sorted(m.rcpt_tos[0] for m in sink.messages[1:]) == sorted([OWNER, "work@example.net"])
    assert "work@example.net" not in log.read_text()


def test_up_finishes_the_message_under_way_when_told_to_stop(
    deployment: Deployment, sink: Sink
) -> None:
    """uvicorn raises the signal that stopped it again after its own shutdown; that
    echo must not kill `up` before the mail plane's orderly stop has finished."""
    key = deployment.user_with_key(OWNER)
    api_port, smtp_port = free_port(), free_port()
    args = ("up", "--api-port", str(api_port), "--smtp-port", str(smtp_port))
    log = deployment.tmp / "up-stop.log"
    with running(with_smarthost(deployment, sink), *args, port=api_port, log=log) as proc:
        wait_for_port(smtp_port)
        created = httpx.post(
            f"http://{HOST}:{api_port}/v3/relay/addresses",
            headers={"Authorization": f"Bearer {key}"},
        ).json()
        address = created["full_address"]
        with smtplib.SMTP(HOST, smtp_port, timeout=30) as client:
            client.ehlo("client.example.com")
            assert client.mail("alice@example.com")[0] == 250
            assert client.rcpt(address)[0] == 250
            assert client.docmd("DATA")[0] == 354
            client.send(note(address)[:20])
            proc.terminate()
            time.sleep(1.0)  # uvicorn has shut down; the mail plane is stopping
            client.send(note(address)[20:] + b".\r\n")
            assert client.getreply()[0] == 250
        assert proc.wait(timeout=15) == 0
    [got] = sink.messages
    assert got.rcpt_tos == [OWNER]
    assert "Finished server process" in log.read_text()
