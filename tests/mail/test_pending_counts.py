"""A delivered message is counted exactly once even when the database is not there at the
moment of counting: the count is retried in the background, saved at an orderly stop,
and written at the next start (mail/pending_counts.py)."""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.config import Settings
from maskmail.core.errors import StoreUnavailable
from maskmail.core.verdict import Counter
from maskmail.mail import counting, pending_counts
from maskmail.mail.plane import mail_plane
from maskmail.store import addresses, clock
from maskmail.store.addresses import delete_address
from maskmail.store.clock import DAY, today
from maskmail.store.driver import DriverPool
from maskmail.store.engine import transaction
from maskmail.store.statements import Script
from tests.mail.conftest import HOST, Mask, Masks, Sink, counts, message, send_async
from tests.support import free_port

pytestmark = pytest.mark.anyio
WAIT = 10.0


class Flaky:
    """``addresses.counted`` for the mail plane, failing as an unavailable database would,
    the first ``failures`` times (raised inside the driver's run for the retries)."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def counted(
        self, dialect: str, address_id: int, counters: Iterable[Counter], day: int | None
    ) -> Script[None]:
        self.calls += 1
        if self.failures > 0:
            self.failures -= 1
            raise StoreUnavailable("the database is unavailable; try again shortly")
        return addresses.counted(dialect, address_id, counters, day)


@pytest.fixture
def flaky(monkeypatch: pytest.MonkeyPatch) -> Flaky:
    found = Flaky(0)
    monkeypatch.setattr(counting, "addresses", found)
    monkeypatch.setattr(pending_counts, "addresses", found)
    monkeypatch.setattr(pending_counts, "RETRY_FIRST", 0.02)
    monkeypatch.setattr(pending_counts, "RETRY_MAX", 0.1)
    return found


def pending() -> float:
    """The gauge as a scrape shows it (this process's value)."""
    return REGISTRY.get_sample_value("maskmail_mail_counts_pending", {"plane": "mail"}) or 0.0


async def eventually_counted(mask: Mask, expected: dict[str, int]) -> None:
    deadline = time.monotonic() + WAIT
    while (found := await mask.counters()) != expected and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert found == expected


@contextmanager
def days_ago(monkeypatch: pytest.MonkeyPatch, days: int) -> Iterator[int]:
    """The clock the store reads, ``days`` behind the real one inside; yields that day."""
    real = time.time
    with monkeypatch.context() as earlier:
        earlier.setattr(clock, "now", lambda: int(real()) - days * DAY)
        yield today()


async def activity_of(engine: AsyncEngine, mask: Mask) -> dict[int, int]:
    """The address's daily counts of forwarded messages, by day."""
    async with transaction(engine, readonly=True) as conn:
        rows = await conn.execute(
            text("SELECT day, num_forwarded FROM daily_activity WHERE address_id = :a"),
            {"a": mask.address_id},
        )
        return {int(day): int(n) for day, n in rows}


def saved(data_dir: Path) -> list[Path]:
    return sorted((data_dir / pending_counts.PENDING_DIR).glob("*.jsonl"))


async def deliver(port: int, mask: Mask, sink: Sink, subject: str) -> None:
    """One message, delivered once and answered 250 (smtplib raises otherwise)."""
    assert (
        await send_async(
            port, "alice@example.com", [mask.address], message(to=mask.address, subject=subject)
        )
        == {}
    )
    assert sum(m.data.count(f"Subject: {subject}".encode()) for m in sink.messages) == 1


async def test_counts_that_failed_after_delivery_are_retried_until_written(
    relay: int, masks: Masks, sink: Sink, flaky: Flaky, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="maskmail")
    mask = await masks.make()
    before = pending()
    # Each message's own write fails, then the first retry; the second writes all three.
    flaky.failures = 4
    for n in range(3):
        await deliver(relay, mask, sink, f"late count {n}")
    await eventually_counted(mask, counts(forwarded=3))
    assert flaky.failures == 0
    await asyncio.sleep(0.3)  # a few retry periods: nothing is counted twice
    assert await mask.counters() == counts(forwarded=3)
    assert pending() == before
    # The logs name the address by its id, never by what it is or whose.
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert f"address {mask.address_id}" in logged
    assert mask.address not in logged and mask.owner not in logged


async def test_a_stop_saves_the_counts_and_the_next_start_writes_them(
    settings: Settings, relay_engine: AsyncEngine, masks: Masks, sink: Sink, flaky: Flaky
) -> None:
    first, second = await masks.make(), await masks.make()
    flaky.failures = 1_000_000  # the database stays unavailable until the stop
    async with mail_plane(settings, relay_engine, host=HOST, port=(port := free_port())):
        await deliver(port, first, sink, "saved 1")
        await deliver(port, first, sink, "saved 2")
        await deliver(port, second, sink, "saved 3")
    assert len(saved(settings.data_dir)) == 1
    assert await first.counters() == counts()

    flaky.failures = 0
    async with mail_plane(settings, relay_engine, host=HOST, port=free_port()):
        assert await first.counters() == counts(forwarded=2)
        assert await second.counters() == counts(forwarded=1)
        assert saved(settings.data_dir) == []
    # Written once: a further start finds nothing to write again.
    async with mail_plane(settings, relay_engine, host=HOST, port=free_port()):
        assert await first.counters() == counts(forwarded=2)


async def test_saved_counts_wait_for_a_start_with_the_database(
    settings: Settings, relay_engine: AsyncEngine, masks: Masks, sink: Sink, flaky: Flaky
) -> None:
    mask = await masks.make()
    flaky.failures = 1_000_000
    async with mail_plane(settings, relay_engine, host=HOST, port=(port := free_port())):
        await deliver(port, mask, sink, "kept twice")
    files = saved(settings.data_dir)
    # Still unavailable at the next start: the file stays as it was, for the one after.
    async with mail_plane(settings, relay_engine, host=HOST, port=free_port()):
        assert saved(settings.data_dir) == files
    flaky.failures = 0
    async with mail_plane(settings, relay_engine, host=HOST, port=free_port()):
        assert await mask.counters() == counts(forwarded=1)
    assert saved(settings.data_dir) == []


async def _delete(engine: AsyncEngine, mask: Mask) -> None:
    async with transaction(engine) as conn:
        await delete_address(conn, mask.user_id, mask.address_id)


async def test_a_pending_count_of_an_address_deleted_since_is_dropped(
    relay: int,
    masks: Masks,
    sink: Sink,
    flaky: Flaky,
    relay_engine: AsyncEngine,
    caplog: pytest.LogCaptureFixture,
) -> None:
    gone, kept = await masks.make(), await masks.make()
    before = pending()
    flaky.failures = 1_000_000
    await deliver(relay, gone, sink, "to be deleted")
    await deliver(relay, kept, sink, "still there")
    assert pending() == before + 2
    await _delete(relay_engine, gone)
    flaky.failures = 0
    await eventually_counted(kept, counts(forwarded=1))
    deadline = time.monotonic() + WAIT
    while pending() != before and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert pending() == before
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_saved_count_of_an_address_deleted_since_is_dropped(
    settings: Settings, relay_engine: AsyncEngine, masks: Masks, sink: Sink, flaky: Flaky
) -> None:
    gone, kept = await masks.make(), await masks.make()
    flaky.failures = 1_000_000
    async with mail_plane(settings, relay_engine, host=HOST, port=(port := free_port())):
        await deliver(port, gone, sink, "saved, then deleted")
        await deliver(port, kept, sink, "saved, still there")
    await _delete(relay_engine, gone)
    flaky.failures = 0
    async with mail_plane(settings, relay_engine, host=HOST, port=free_port()):
        assert await kept.counters() == counts(forwarded=1)
    assert saved(settings.data_dir) == []


async def test_a_saved_file_is_json_lines_of_ids_days_and_sums(tmp_path: Path) -> None:
    path = pending_counts.save(
        tmp_path, {(7, 20419): collections.Counter(num_forwarded=2, num_spam=1)}
    )
    assert path.read_text() == (
        '{"address_id": 7, "day": 20419, "counters": {"num_forwarded": 2, "num_spam": 1}}\n'
    )
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


async def test_a_worker_leaves_saved_counts_to_the_one_replaying_them(
    relay_engine: AsyncEngine, masks: Masks, tmp_path: Path
) -> None:
    mask = await masks.make()
    pending_counts.save(tmp_path, {(mask.address_id, today()): collections.Counter(num_blocked=1)})
    drivers = DriverPool(relay_engine)
    with pending_counts._replaying(tmp_path / pending_counts.PENDING_DIR) as mine:
        assert mine
        await pending_counts.replay(drivers, tmp_path, keep_days=90)
        assert await mask.counters() == counts()
    await pending_counts.replay(drivers, tmp_path, keep_days=90)
    assert await mask.counters() == counts(blocked=1)
    assert saved(tmp_path) == []


async def test_a_line_that_is_not_a_count_is_skipped(
    relay_engine: AsyncEngine, masks: Masks, tmp_path: Path
) -> None:
    mask = await masks.make()
    path = pending_counts.save(
        tmp_path, {(mask.address_id, today()): collections.Counter(num_spam=2)}
    )
    with path.open("a") as out:
        out.write('{"address_id": "x"}\nnot json\n{"address_id": 1, "counters": {"drop": 1}}\n')
        bad_day = {"address_id": mask.address_id, "day": "x", "counters": {"num_spam": 1}}
        out.write(json.dumps(bad_day) + "\n")
    await pending_counts.replay(DriverPool(relay_engine), tmp_path, keep_days=90)
    assert await mask.counters() == counts(spam=2)
    assert saved(tmp_path) == []


async def test_a_count_retried_after_midnight_goes_to_the_day_the_message_was_handled(
    relay: int,
    masks: Masks,
    sink: Sink,
    flaky: Flaky,
    relay_engine: AsyncEngine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mask = await masks.make()
    flaky.failures = 1_000_000
    with days_ago(monkeypatch, 1) as handled:
        await deliver(relay, mask, sink, "just before midnight")
    # Midnight has passed; then the database comes back.
    flaky.failures = 0
    await eventually_counted(mask, counts(forwarded=1))
    assert handled == today() - 1
    assert await activity_of(relay_engine, mask) == {handled: 1}


async def test_a_saved_count_goes_to_the_day_the_message_was_handled(
    settings: Settings,
    relay_engine: AsyncEngine,
    masks: Masks,
    sink: Sink,
    flaky: Flaky,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mask = await masks.make()
    flaky.failures = 1_000_000
    with days_ago(monkeypatch, 3) as handled:
        async with mail_plane(settings, relay_engine, host=HOST, port=(port := free_port())):
            await deliver(port, mask, sink, "three days ago")
    # Days later, the next start writes it under the day it was delivered on.
    flaky.failures = 0
    async with mail_plane(settings, relay_engine, host=HOST, port=free_port()):
        assert await mask.counters() == counts(forwarded=1)
    assert await activity_of(relay_engine, mask) == {handled: 1}


async def test_a_line_saved_without_a_day_goes_to_the_day_it_is_written(
    relay_engine: AsyncEngine, masks: Masks, tmp_path: Path
) -> None:
    """As files saved by the versions before the day was kept."""
    mask = await masks.make()
    directory = tmp_path / pending_counts.PENDING_DIR
    directory.mkdir()
    (directory / "1-old.jsonl").write_text(
        json.dumps({"address_id": mask.address_id, "counters": {"num_forwarded": 2}}) + "\n"
    )
    await pending_counts.replay(DriverPool(relay_engine), tmp_path, keep_days=90)
    assert await mask.counters() == counts(forwarded=2)
    assert await activity_of(relay_engine, mask) == {today(): 2}
    assert saved(tmp_path) == []


async def test_a_late_count_of_a_day_already_forgotten_adds_to_the_totals_only(
    relay_engine: AsyncEngine, masks: Masks, tmp_path: Path
) -> None:
    mask = await masks.make()
    kept, forgotten = today() - 29, today() - 30
    pending_counts.save(
        tmp_path,
        {
            (mask.address_id, kept): collections.Counter(num_forwarded=1),
            (mask.address_id, forgotten): collections.Counter(num_forwarded=2),
        },
    )
    await pending_counts.replay(DriverPool(relay_engine), tmp_path, keep_days=30)
    assert await mask.counters() == counts(forwarded=3)
    assert await activity_of(relay_engine, mask) == {kept: 1}
