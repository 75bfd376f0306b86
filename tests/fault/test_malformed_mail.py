"""Malformed and hostile mail through real SMTP: a true answer for each, no crash, no stall."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from maskmail.mail.dkim import generate_key
from tests.fault.hostile_mail import GENERATED, corpus, fixture_files
from tests.fault.relay import (
    ANSWERS,
    Outcome,
    Relayed,
    ThreadedRelay,
    assert_clean_headers,
    forwarded_to,
    threaded_relay,
)
from tests.mail.conftest import HOST, Sink, mail_settings, message

pytestmark = pytest.mark.slow

# How long a well-behaved client may wait for its message while hostile ones are
# processed: generous for a loaded 2-core machine, far below what a blocked loop costs
# (one quadratic From header once held the loop for 38 s).
BYSTANDER_BOUND = 10.0
HOSTILE_CLIENTS = 4
# Accepted and dropped uncounted: it carries our own loop marker.
DROPPED = {"hdr-forged-loop-marker"}


@pytest.fixture
def hostile_relay(database_url: str, tmp_path: Path, sink: Sink) -> Iterator[ThreadedRelay]:
    """The mail plane as deployed: DKIM signing on, a sink as the smarthost."""
    private, _ = generate_key()
    (tmp_path / "dkim.key").write_bytes(private)
    settings = mail_settings(database_url, tmp_path, smarthost=f"{HOST}:{sink.port}")
    with threaded_relay(settings, database_url) as relay:
        yield relay


class Bystander(threading.Thread):
    """A normal client sending ordinary mail in a loop, timing each message."""

    def __init__(self, relay: ThreadedRelay, mask: Relayed) -> None:
        super().__init__(daemon=True)
        self.relay = relay
        self.mask = mask
        self.done = threading.Event()
        self.waits: list[float] = []
        self.answers: list[int] = []

    def run(self) -> None:
        while not self.done.is_set():
            started = time.monotonic()
            outcome = self.relay.submit(self.mask.address, message(to=self.mask.address))
            self.waits.append(time.monotonic() - started)
            self.answers.append(outcome.data)


def test_the_corpus_is_large_and_varied() -> None:
    files = fixture_files()
    assert len(files) >= 50
    kinds = {name.split("-")[0] for name in files}
    assert {"mime", "enc", "hdr", "inj", "body", "attach"} <= kinds
    assert {"gen-zip-of-death", "gen-deep-multipart", "gen-long-header-line"} <= set(GENERATED)


def test_hostile_messages_get_true_answers_without_stalling_others(
    hostile_relay: ThreadedRelay, sink: Sink, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    messages = corpus()
    victim = hostile_relay.new_address()
    bystander = Bystander(hostile_relay, hostile_relay.new_address())
    bystander.start()
    try:
        with ThreadPoolExecutor(HOSTILE_CLIENTS) as pool:
            outcomes = dict(
                zip(
                    messages,
                    pool.map(
                        lambda data: hostile_relay.submit(victim.address, data), messages.values()
                    ),
                    strict=True,
                )
            )
    finally:
        bystander.done.set()
        bystander.join(60)

    wrong = {name: o for name, o in outcomes.items() if not _proper(o)}
    assert not wrong, wrong
    assert outcomes["gen-long-header-line"].data == 500
    assert {outcomes[name].data for name in DROPPED} == {250}
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors]

    delivered = [name for name, o in outcomes.items() if o.data == 250 and name not in DROPPED]
    forwards = forwarded_to(sink, victim)
    assert len(forwards) == len(delivered) == hostile_relay.forwarded(victim.id)
    for forward in forwards:
        assert_clean_headers(forward)

    assert len(bystander.waits) >= 3
    assert set(bystander.answers) == {250}
    assert max(bystander.waits) < BYSTANDER_BOUND, sorted(bystander.waits)[-5:]
    assert len(forwarded_to(sink, bystander.mask)) == len(bystander.answers)


def _proper(outcome: Outcome) -> bool:
    """Every stage answered, the message got an expected answer, and the session lives."""
    return (
        outcome.mail == 250
        and outcome.rcpt == 250
        and outcome.data in ANSWERS
        and outcome.noop == 250
    )
