"""Counts of delivered messages that could not be written yet: kept, retried, never lost.

A message's counters are added after it was delivered (mail/counting.py). When the
database is not there at that moment, answering 451 would make the sender retry and the
owner get the message twice, so the count is kept here instead and written later: in
the background with a capped backoff, once more at the mail plane's orderly stop, and
what still cannot be written then is saved in the data dir and written at the next
start (docs/mail.md, Durability).

A count keeps the UTC day the message was handled on, and joins that day's daily counts
when written, however late: unless the daily counts have forgotten that day already
(``MASKMAIL_ACTIVITY_DAYS``), when it adds to the address's totals only.

The saved counts are JSON lines, one address and day a line (``{"address_id": 7, "day":
20419, "counters": {"num_forwarded": 2}}``), in files of their own under
``pending-counts/``: every worker of ``smtp --workers`` saves its own file, and the one
that holds the directory's lock at start-up writes them all, in one transaction, then
removes them. A line without a day (saved before days were kept) goes to the day it is
written.
"""

from __future__ import annotations

import asyncio
import collections
import fcntl
import json
import logging
import os
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import get_args

from prometheus_client import Gauge

from maskmail import metrics
from maskmail.core.errors import StoreUnavailable
from maskmail.core.verdict import Counter
from maskmail.store import activity, addresses
from maskmail.store.clock import today
from maskmail.store.driver import WRITE, DriverPool
from maskmail.store.statements import Script

log = logging.getLogger(__name__)


def _pending() -> Gauge:
    # Labelled at use, not at import: metrics.py says why.
    return metrics.mail_counts_pending.labels("mail")


# The wait before the first retry, twice as long after each failed one up to RETRY_MAX
# (seconds); the tests shrink them.
RETRY_FIRST = 0.5
RETRY_MAX = 30.0
PENDING_DIR = "pending-counts"
_LOCK = ".lock"
_COUNTERS: tuple[Counter, ...] = get_args(Counter)

# An address id, and the UTC day its messages were handled on (clock.today()).
Key = tuple[int, int]
# Per address and day: how much each counter moves.
Counts = dict[Key, collections.Counter[str]]


def _day_of(day: int, keep_days: int) -> int | None:
    """The day whose daily counts a late count joins: its own, but none once the daily
    counts forgot that day (writing it would bring back a day already deleted), and
    never one after today (a clock set back since)."""
    if day < activity.first_kept(keep_days):
        return None
    return min(day, today())


def _adding(dialect: str, key: Key, sums: collections.Counter[str], keep_days: int) -> Script[None]:
    """Add ``sums`` to the address's counters and its counts of the day, as steps of one
    each (``store.addresses.counted``), inside the caller's transaction. An address that
    was deleted since has no row: the statements change nothing, and the count is gone
    with it."""
    address_id, day = key
    into = _day_of(day, keep_days)
    left = collections.Counter({name: sums[name] for name in _COUNTERS})
    while +left:
        step = tuple(name for name in _COUNTERS if left[name] > 0)
        yield from addresses.counted(dialect, address_id, step, into)
        left.subtract(step)


def _adding_all(dialect: str, counts: Counts, keep_days: int) -> Script[None]:
    for key, sums in counts.items():
        yield from _adding(dialect, key, sums, keep_days)


def _merge(into: Counts, counts: Counts) -> None:
    for key, sums in counts.items():
        into.setdefault(key, collections.Counter()).update(sums)


class PendingCounts:
    """The counts the mail plane delivered but could not write, per address and day, and
    the background task that writes them. ``add`` never waits; ``stop`` makes the last
    try. ``keep_days`` is MASKMAIL_ACTIVITY_DAYS."""

    def __init__(self, drivers: DriverPool, keep_days: int) -> None:
        self._drivers = drivers
        self._keep_days = keep_days
        self._counts: Counts = {}
        # Messages per address and day, for the gauge and the logs.
        self._messages: collections.Counter[Key] = collections.Counter()
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._stopped = False

    def __len__(self) -> int:
        """How many messages' counts are waiting."""
        return self._messages.total()

    def add(self, address_id: int, counters: Iterable[Counter], day: int) -> None:
        """Keep one delivered message's counters, to be written in the background under
        ``day``, the one it was handled on."""
        if self._stopped:
            log.error("delivered after the stop, could not count it for address %d", address_id)
            return
        self._counts.setdefault((address_id, day), collections.Counter()).update(counters)
        self._messages[address_id, day] += 1
        _pending().inc()
        log.warning("delivered, but could not count it for address %d yet: retrying", address_id)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._retrying())

    async def _retrying(self) -> None:
        delay = RETRY_FIRST
        while self._counts and not self._stopped:
            with suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)
            if self._stopped:
                return
            if not await self.flush():
                delay = min(delay * 2, RETRY_MAX)

    async def flush(self) -> bool:
        """Write what is waiting, one transaction per address and day; True when none is
        left. The first the database refuses for being unavailable ends the round."""
        while self._counts:
            key = next(iter(self._counts))
            address_id = key[0]
            sums = self._counts.pop(key)
            messages = self._messages.pop(key)
            adding = _adding(self._drivers.dialect, key, sums, self._keep_days)
            try:
                await self._drivers.run(adding, WRITE)
            except StoreUnavailable:
                _merge(self._counts, {key: sums})
                self._messages[key] += messages
                return False
            except Exception:
                # Not an outage: a retry would fail the same way.
                log.exception(
                    "could not count %d delivered messages for address %d", messages, address_id
                )
                _pending().dec(messages)
                continue
            _pending().dec(messages)
            log.info("counted %d delivered messages late for address %d", messages, address_id)
        return True

    async def stop(self, data_dir: Path) -> None:
        """At the mail plane's orderly stop, after the last message was answered: let a
        write under way end (a cancelled one might have committed), try once more, and
        save what is left for the next start."""
        self._stopped = True
        self._wake.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        if not self._counts or await self.flush():
            return
        messages = len(self)
        _pending().dec(messages)
        try:
            path = save(data_dir, self._counts)
        except OSError as exc:
            # The rest of the stop (the smarthost, the pool) must still happen.
            log.error("could not count %d delivered messages, nor save them: %s", messages, exc)
            return
        finally:
            self._counts.clear()
            self._messages.clear()
        log.warning(
            "could not count %d delivered messages before stopping; kept in %s for the next start",
            messages,
            path,
        )


def save(data_dir: Path, counts: Counts) -> Path:
    """``counts`` in a new file of ``pending-counts/``, whole or not at all: written
    aside, synced, then renamed into place."""
    directory = data_dir / PENDING_DIR
    directory.mkdir(parents=True, exist_ok=True)
    name = f"{os.getpid()}-{secrets.token_hex(4)}.jsonl"
    tmp = directory / f".{name}.tmp"
    lines = (
        json.dumps({"address_id": address_id, "day": day, "counters": dict(sums)}) + "\n"
        for (address_id, day), sums in counts.items()
    )
    with open(tmp, "w", encoding="utf-8") as out:
        out.writelines(lines)
        out.flush()
        os.fsync(out.fileno())
    path = directory / name
    tmp.rename(path)
    _sync_dir(directory)
    return path


def _sync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read(path: Path) -> Counts:
    counts: Counts = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            address_id = int(entry["address_id"])
            day = today() if entry.get("day") is None else int(entry["day"])
            sums = collections.Counter(
                {
                    str(name): int(n)
                    for name, n in entry["counters"].items()
                    if name in _COUNTERS and int(n) > 0
                }
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            log.error("skipping line %d of %s: not a pending count", number, path)
            continue
        _merge(counts, {(address_id, day): sums})
    return counts


@contextmanager
def _replaying(directory: Path) -> Iterator[bool]:
    """The directory's lock, without waiting: False when another worker replays."""
    fd = os.open(directory / _LOCK, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


async def replay(drivers: DriverPool, data_dir: Path, *, keep_days: int) -> None:
    """At start-up, write the counts a previous run saved, in one transaction, and then
    remove their files; when the database is unavailable they wait for the next start.
    ``keep_days`` is MASKMAIL_ACTIVITY_DAYS."""
    directory = data_dir / PENDING_DIR
    if not directory.is_dir():
        return
    with _replaying(directory) as mine:
        files = sorted(directory.glob("*.jsonl"))
        if not mine or not files:
            return
        counts: Counts = {}
        for path in files:
            _merge(counts, _read(path))
        try:
            await drivers.run(_adding_all(drivers.dialect, counts, keep_days), WRITE)
        except StoreUnavailable:
            log.warning(
                "could not count the delivered messages kept in %s; kept for the next start",
                directory,
            )
            return
        for path in files:
            path.unlink()
        _sync_dir(directory)
    addresses_kept = len({address_id for address_id, _ in counts})
    log.info("counted the delivered messages of %d addresses kept at the last stop", addresses_kept)
