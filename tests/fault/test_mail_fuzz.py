"""Random messages and senders through real SMTP: every answer is a true one."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fault.relay import (
    ANSWERS,
    ThreadedRelay,
    assert_clean_headers,
    forwarded_to,
    threaded_relay,
)
from tests.mail.conftest import HOST, Sink, mail_settings

pytestmark = pytest.mark.slow

NAMES = [
    b"From", b"Reply-To", b"To", b"Subject", b"Content-Type", b"Content-Transfer-Encoding",
    b"MIME-Version", b"Message-ID", b"X-Maskmail-Loop", b"X-Spam-Flag", b"Bcc", b"",
]  # fmt: skip
# Bytes that break parsers: line breaks of every kind, NUL, quotes, brackets, 8-bit.
NASTY = st.sampled_from(
    [b"\r", b"\n", b"\r\n", b"\r\n ", b"\x00", b'"', b"(", b")", b"<", b">", b"@", b"=?", b"?="]
)
VALUE = st.lists(st.one_of(NASTY, st.binary(max_size=40)), max_size=12).map(b"".join)
NAME = st.one_of(st.sampled_from(NAMES), st.binary(min_size=1, max_size=20))
HEADERS = st.lists(st.tuples(NAME, VALUE), max_size=12)
EOL = st.sampled_from([b"\r\n", b"\n", b"\r"])
# Printable ASCII and NUL: smtplib sends commands as ASCII and a line break would end one.
SENDER = st.text(
    st.characters(codec="ascii", exclude_characters="\r\n"), max_size=60
) | st.emails().map(str)


@st.composite
def raw_messages(draw: st.DrawFn) -> bytes:
    eol = draw(EOL)
    block = b"".join(name + b":" + value + eol for name, value in draw(HEADERS))
    return block + draw(EOL) + draw(st.binary(max_size=2000))


@pytest.fixture
def fuzz_relay(database_url: str, tmp_path: Path, sink: Sink) -> Iterator[ThreadedRelay]:
    settings_ = mail_settings(database_url, tmp_path, smarthost=f"{HOST}:{sink.port}")
    with threaded_relay(settings_, database_url) as relay:
        yield relay


def test_random_messages_get_true_answers(
    fuzz_relay: ThreadedRelay, sink: Sink, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    victim = fuzz_relay.new_address()

    @given(data=raw_messages(), sender=SENDER)
    @settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
    def check(data: bytes, sender: str) -> None:
        before = len(forwarded_to(sink, victim))
        outcome = fuzz_relay.submit(victim.address, data, sender=sender)
        assert outcome.noop == 250
        # A sender is taken or refused for good; nothing here is a temporary failure.
        assert outcome.mail == 250 or 500 <= outcome.mail < 600, outcome
        if outcome.mail == 250:
            assert outcome.rcpt == 250
            assert outcome.data in ANSWERS, outcome
        forwards = forwarded_to(sink, victim)
        # Accepted: forwarded once, or dropped for carrying our loop marker; never twice.
        assert len(forwards) - before == (1 if outcome.data == 250 else 0) or (
            outcome.data == 250 and len(forwards) == before and b"maskmail-loop" in data.lower()
        )
        assert fuzz_relay.forwarded(victim.id) == len(forwards)
        if len(forwards) > before:
            assert_clean_headers(forwards[-1])

    check()
    # The examples reach the forward path, not only the refusals.
    assert len(forwarded_to(sink, victim)) >= 10
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors]
