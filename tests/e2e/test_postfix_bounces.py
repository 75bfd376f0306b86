"""A real Postfix DSN, end to end: the owner's mailbox refuses a forward, Postfix bounces
it to the signed bounce address, and maskmail records it and pauses the address."""

from __future__ import annotations

import smtplib
import time
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import Deployment, Front
from tests.sink import HOST, Sink

pytestmark = pytest.mark.slow
DOMAIN = "relay.test"  # the deployment fixture's domain
OWNERS_DOMAIN = "owners.example"
OWNER = f"owner@{OWNERS_DOMAIN}"
BOUNCE_TIMEOUT = 60


def wait_for_bounce(api: httpx.Client, address_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + BOUNCE_TIMEOUT
    while True:
        report: dict[str, Any] = api.get(f"/v3/relay/addresses/{address_id}/bounces").json()
        if report["bounces"] or time.monotonic() > deadline:
            return report
        time.sleep(0.3)


def test_a_postfix_dsn_is_recorded_and_pauses(
    deployment: Deployment, sink: Sink, front: Front
) -> None:
    key = deployment.user_with_key(OWNER)
    # The owner's provider refuses for good: Postfix must bounce the forward.
    sink.handler.reply = "550 5.1.1 <owner@owners.example>: Recipient address rejected"
    with front.postfix(
        key=key,
        env={"MASKMAIL_BOUNCE_PAUSE_THRESHOLD": "1"},
    ) as run:
        created = run.api.post("/v3/relay/addresses").json()
        address = created["full_address"]
        data = (
            f"From: Alice Example <alice@sender.example>\r\nTo: {address}\r\n"
            "Subject: will bounce\r\nMessage-ID: <pf-b@sender.example>\r\n"
            "\r\nThis forward bounces.\r\n"
        ).encode()
        with smtplib.SMTP(HOST, run.ports.inbound, timeout=30) as client:
            assert client.sendmail("alice@sender.example", [address], data) == {}
        report = wait_for_bounce(run.api, created["id"])
        shown = run.api.get(f"/v3/relay/addresses/{created['id']}").json()
        log_text = run.log.read_text()

    assert report["bounces"], log_text
    [entry] = report["bounces"]
    assert (entry["kind"], entry["status"]) == ("hard", "5.1.1")
    assert report["paused"] is True and report["hard_bounces_24h"] == 1
    assert shown["enabled"] is False
    # maskmail took the DSN at once: Postfix's delivery of it to maskmail succeeded.
    delivered = [
        line
        for line in log_text.splitlines()
        if f"to=<bounce+{created['id']}." in line and "status=sent" in line
    ]
    assert len(delivered) == 1, log_text
    assert sink.messages == []
