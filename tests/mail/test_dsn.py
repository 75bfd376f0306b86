"""Reading bounces: flufl.bounce's detectors, then the delivery-status fields it missed."""

from __future__ import annotations

from pathlib import Path

import pytest

from maskmail.core.dsn import Bounce, Kind
from maskmail.mail.dsn import read_bounce

FIXTURES = Path(__file__).with_name("fixtures")


def _fixture(name: str) -> bytes:
    text = (FIXTURES / name).read_text()
    for placeholder, value in (
        ("{{BOUNCE}}", "bounce+7.20414.0123456789abcdef@relay.test"),
        ("{{OWNER}}", "owner@example.com"),
        ("{{RELAY}}", "mask1234@relay.test"),
    ):
        text = text.replace(placeholder, value)
    return text.encode()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("dsn-postfix-hard.eml", Bounce(Kind.HARD, "5.1.1")),
        ("dsn-gmail-hard.eml", Bounce(Kind.HARD, "5.1.1")),
        ("bounce-exim-text.eml", Bounce(Kind.HARD, "failed")),
        ("dsn-postfix-delayed.eml", Bounce(Kind.SOFT, "4.4.1")),
        ("nested.eml", Bounce(Kind.SOFT, "unknown")),
    ],
)
def test_fixtures(name: str, expected: Bounce) -> None:
    assert read_bounce(_fixture(name)) == expected


def _report(recipient_block: str) -> bytes:
    return (
        "From: MAILER-DAEMON@mx.example.net\r\nTo: bounce+1.2.x@relay.test\r\n"
        "Subject: failure notice\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="b"\r\n\r\n'
        "--b\r\nContent-Type: text/plain\r\n\r\nIt did not work.\r\n"
        "--b\r\nContent-Type: message/delivery-status\r\n\r\n"
        "Reporting-MTA: dns; mx.example.net\r\n\r\n"
        f"{recipient_block}\r\n--b--\r\n"
    ).encode()


def test_fields_are_read_when_the_detectors_find_no_recipient() -> None:
    # No Final-Recipient: flufl.bounce cannot name who failed, the fields still say how.
    assert read_bounce(_report("Action: failed\r\nStatus: 5.2.1\r\n")) == Bounce(Kind.HARD, "5.2.1")
    assert read_bounce(_report("Action: delayed\r\nStatus: 4.2.2\r\n")) == Bounce(
        Kind.SOFT, "4.2.2"
    )


def test_a_failure_after_retries_ran_out_is_soft() -> None:
    block = "Final-Recipient: rfc822; owner@example.com\r\nAction: failed\r\nStatus: 4.4.7\r\n"
    assert read_bounce(_report(block)) == Bounce(Kind.SOFT, "4.4.7")


def test_garbage_is_an_unknown_soft_bounce() -> None:
    assert read_bounce(b"\x00\xff not mail at all") == Bounce(Kind.SOFT, "unknown")
    assert read_bounce(b"") == Bounce(Kind.SOFT, "unknown")
