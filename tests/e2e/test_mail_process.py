"""The mail plane as a user runs it: `maskmail up` and `maskmail smtp` as real processes."""

from __future__ import annotations

import smtplib
from email import message_from_bytes, policy
from pathlib import Path

import httpx
import pytest

from tests.sink import HOST, Sink
from tests.support import free_port, run_cli, running, wait_for_port

DOMAIN = "relay.e2e.test"
pytestmark = pytest.mark.slow


def environment(tmp_path: Path, sink: Sink) -> dict[str, str]:
    return {
        "MASKMAIL_DATA_DIR": str(tmp_path / "data"),
        "MASKMAIL_DATABASE_URL": f"sqlite:///{tmp_path / 'e2e.db'}",
        "MASKMAIL_DOMAIN": DOMAIN,
        "MASKMAIL_SMARTHOST": f"{HOST}:{sink.port}",
    }


def new_key(env: dict[str, str], owner: str) -> str:
    for args in (("db", "upgrade"), ("user", "add", owner)):
        assert run_cli(env, *args).returncode == 0
    created = run_cli(env, "key", "create", owner)
    assert created.returncode == 0, created.stderr
    return created.stdout.strip()


def send(port: int, rcpt: str, data: bytes) -> dict[str, tuple[int, bytes]]:
    with smtplib.SMTP(HOST, port, timeout=30) as client:
        return client.sendmail("alice@example.com", [rcpt], data)


def note(rcpt: str) -> bytes:
    return f"From: Alice <alice@example.com>\r\nTo: {rcpt}\r\nSubject: hi\r\n\r\nHi.\r\n".encode()


def test_up_serves_api_and_smtp_in_one_process(tmp_path: Path, sink: Sink) -> None:
    env = environment(tmp_path, sink)
    key = new_key(env, "owner@example.com")
    api_port, smtp_port = free_port(), free_port()
    args = ("up", "--api-port", str(api_port), "--smtp-port", str(smtp_port))
    with running(env, *args, port=api_port, log=tmp_path / "up.log"):
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
    assert got.rcpt_tos == ["owner@example.com"]
    forwarded = message_from_bytes(got.data, policy=policy.default)
    assert str(forwarded["From"]).endswith(f"<{address}>")
    log = (tmp_path / "up.log").read_text()
    assert "owner@example.com" not in log and "alice@example.com" not in log


def test_smtp_command_runs_the_mail_plane_alone(tmp_path: Path, sink: Sink) -> None:
    env = environment(tmp_path, sink)
    new_key(env, "owner@example.com")
    port = free_port()
    with running(env, "smtp", "--port", str(port), port=port, log=tmp_path / "smtp.log") as proc:
        with pytest.raises(smtplib.SMTPRecipientsRefused) as caught:
            send(port, f"nobody@{DOMAIN}", note(f"nobody@{DOMAIN}"))
        assert caught.value.recipients[f"nobody@{DOMAIN}"][0] == 550
        with smtplib.SMTP(HOST, port, timeout=30) as client:
            code, _ = client.ehlo("client.example.com")
            assert code == 250
    assert proc.returncode == 0  # SIGTERM is a clean stop
    # The bounce secret was made once and kept in the data dir.
    assert (tmp_path / "data" / "bounce-secret").stat().st_size == 64
