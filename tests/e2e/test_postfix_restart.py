"""Restarting the mail plane behind a real Postfix defers nothing (issue 21 item 5).

Postfix, configured as docs/postfix.md says, asks maskmail's policy service about every
recipient, looks domains up in its socketmap and hands the mail to maskmail's SMTP
server. maskmail is stopped and started again, as ``systemctl restart maskmail-smtp``
does with deploy/systemd/maskmail-smtp.socket holding its ports, while mail flows: no
sender is refused, and every message arrives within seconds of the restart.
"""

from __future__ import annotations

import email
import smtplib
import threading
import time

import pytest

from tests.e2e.conftest import Deployment, Front
from tests.e2e.test_postfix import OWNER
from tests.postfix import queue
from tests.sink import HOST, Sink

pytestmark = pytest.mark.slow

# Postfix keeps a connection open for reuse only when mail queues up for its destination;
# a busy machine queues some, a quiet one may not. Keeping every connection to maskmail
# (and to the sink, on the same address) makes each run reuse them across the restart.
CACHE_CONNECTIONS = "smtp_connection_cache_destinations = 127.0.0.1\n"

# A deferral costs minutes (Postfix's minimal_backoff_time is 300 s); a busy machine may
# take a while to restart and deliver, but not that long.
AFTER_RESTART = 60.0


def _message(to: str, subject: str) -> bytes:
    return (
        f"From: Shop <news@sender.example>\r\nTo: {to}\r\nSubject: {subject}\r\n"
        f"Message-ID: <{subject}@sender.example>\r\n\r\nHello.\r\n"
    ).encode()


def _subjects(sink: Sink) -> set[str]:
    return {str(email.message_from_bytes(m.data)["Subject"]) for m in sink.messages}


def test_a_restart_behind_postfix_defers_nothing(
    deployment: Deployment, sink: Sink, front: Front
) -> None:
    key = deployment.user_with_key(OWNER)
    sent: list[str] = []
    refused: list[str] = []
    stop = threading.Event()
    with front.postfix(key=key, socket_unit=True, postfix_settings=CACHE_CONNECTIONS) as run:
        address = run.api.post("/v3/relay/addresses").json()["full_address"]

        def flow() -> None:
            while not stop.is_set():
                subject = f"restart-{len(sent) + len(refused)}"
                try:
                    with smtplib.SMTP(HOST, run.ports.inbound, timeout=120) as client:
                        client.sendmail(
                            "news@sender.example", [address], _message(address, subject)
                        )
                    sent.append(subject)
                except (smtplib.SMTPException, OSError) as exc:
                    refused.append(f"{subject}: {exc}")
                time.sleep(0.1)

        sender = threading.Thread(target=flow)
        sender.start()
        try:
            time.sleep(3)
            run.restart()
            back = time.monotonic()
            time.sleep(3)
        finally:
            stop.set()
            sender.join(timeout=300)
        while _subjects(sink) < set(sent) and time.monotonic() < back + AFTER_RESTART:
            time.sleep(0.2)
        arrived = _subjects(sink)
        left = queue(run.log)
        log = run.log.read_text()
    assert refused == [], refused
    assert len(sent) >= 10, sent
    assert set(sent) <= arrived, (sorted(set(sent) - arrived), log[-3000:])
    assert left == [], left
    assert "Temporary lookup failure" not in log
    assert "conn_use=" in log  # Postfix did reuse connections
