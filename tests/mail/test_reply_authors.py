"""What the reply path reads from the header block: the From addresses and the trusted
relay's Authentication-Results, as the email package's default policy gives them."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from maskmail.core import senders
from maskmail.mail.replying import _authentication, _from_addresses
from maskmail.mail.rewrite import parse_headers


@pytest.mark.parametrize(
    ("block", "addresses"),
    [
        (
            b"From: =?utf-8?q?A?= <a@example.com>\r\n"
            b"from: B\r\n <b@example.com>,\r\n\tc@example.com\r\n",
            ["a@example.com", "b@example.com", "c@example.com"],
        ),
        (b"From: =?utf-8?b?SsO8cmdlbg==?= <j@example.com>\r\n", ["j@example.com"]),
        (b"From: Zo\xeb <z@example.com>\r\n", ["z@example.com"]),
        (b"From: <<<broken\r\n", ["<>"]),
        (b"Subject: no author\r\n", []),
        # Any From too long to parse safely makes the whole header unreadable.
        (b"From: a@example.com\r\nFrom: " + b"x" * 1001 + b"\r\n", None),
    ],
)
def test_from_addresses(block: bytes, addresses: list[str] | None) -> None:
    assert _from_addresses(parse_headers(block)) == addresses


def test_authentication_results_are_read_unfolded_and_decoded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[list[str]] = []
    real = senders.authentication

    def recording(values: Sequence[str], domain: str, ids: Any = ()) -> senders.Authentication:
        seen.append(list(values))
        return real(values, domain, ids)

    monkeypatch.setattr(senders, "authentication", recording)
    ctx: Any = SimpleNamespace(judge=SimpleNamespace(trusts=lambda ip: True), authserv_ids=())
    session = SimpleNamespace(peer=("127.0.0.1", 25))
    block = (
        b"Authentication-Results: mx.relay.test;\r\n spf=pass smtp.mailfrom=example.org;\r\n"
        b"\tdkim=pass header.d=example.org\r\n"
        b"authentication-results: other.test; dkim=fail =?utf-8?q?J=C3=BC?= \xff\r\n"
    )
    assert _authentication(ctx, session, parse_headers(block), "o@example.org") is not None
    assert seen == [
        [
            "mx.relay.test; spf=pass smtp.mailfrom=example.org;\tdkim=pass header.d=example.org",
            "other.test; dkim=fail J\u00fc \ufffd",
        ]
    ]
    assert _authentication(ctx, session, parse_headers(b"Subject: x\r\n"), "o@example.org") is None
