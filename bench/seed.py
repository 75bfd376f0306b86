"""Bulk loading users, keys and addresses straight into a migrated database (not via the API).

The raw drivers do it: ``executemany`` in one SQLite transaction, COPY on PostgreSQL. A
million rows load in well under a minute that way; a million POSTs would take hours.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from bench.lab import PEER_DIR, Database, system_env
from maskmail.core.keys import generate_key, hash_key
from maskmail.store.addresses import ADDRESS_COLUMNS as STORE_COLUMNS

DOMAIN = "relay.localhost"
BATCH = 50_000
# The columns each table is loaded with, for both databases; an address's are every
# stored column but the id, in the store's order.
COLUMNS = {
    "users": ("id", "email", "email_key", "created_time"),
    "mailboxes": ("user_id", "email", "email_key", "verified", "is_default", "created_time"),
    "api_keys": ("user_id", "key_hash", "created_time", "revoked_time"),
    "addresses": tuple(column.name for column in STORE_COLUMNS[1:]),
}


class Progress:
    """A one-line progress bar on stderr, redrawn at most ten times a second."""

    def __init__(self, label: str, total: int, shown: bool) -> None:
        self.label, self.total, self.shown = label, total, shown
        self.done, self.started, self.drawn = 0, time.monotonic(), 0.0

    def add(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if self.shown and (now - self.drawn > 0.1 or self.done >= self.total):
            self.drawn = now
            filled = int(30 * self.done / max(self.total, 1))
            rate = self.done / max(now - self.started, 1e-9)
            sys.stderr.write(
                f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] "
                f"{self.done:,}/{self.total:,} ({rate:,.0f} rows/s)"
            )
            if self.done >= self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()


def _address_rows(counts: Sequence[int], created: int) -> Iterator[tuple[object, ...]]:
    """A new address's row, as the store creates one (enabled, counters at zero)."""
    new: dict[str, object] = {"subdomain": None, "enabled": True, "block_spam": False}
    new |= {"description": "", "created_time": created, "updated_time": None, "domain": DOMAIN}
    new |= {name: 0 for name in COLUMNS["addresses"] if name.startswith("num_")}
    for user_id, n in enumerate(counts, start=1):
        for i in range(n):
            row = new | {"user_id": user_id, "address": f"u{user_id}n{i}"}
            yield tuple(row[name] for name in COLUMNS["addresses"])


def _batches(rows: Iterator[tuple[object, ...]]) -> Iterator[list[tuple[object, ...]]]:
    batch: list[tuple[object, ...]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass
class Rows:
    """What one load writes: users, their mailbox one, their keys, and their addresses in
    batches."""

    users: list[tuple[object, ...]]
    mailboxes: list[tuple[object, ...]]
    api_keys: list[tuple[object, ...]]
    addresses: Iterator[list[tuple[object, ...]]]
    bar: Progress


def load_maskmail(db: Database, counts: Sequence[int], *, progress: bool = False) -> list[str]:
    """Users 1..len(counts), the i-th with counts[i] addresses and one API key; their keys."""
    keys = [generate_key() for _ in counts]
    created = int(time.time())
    # email_key is the mailbox in lower case (store/accounts.py); these are lower already.
    users: list[tuple[object, ...]] = [
        (i, f"user{i}@example.com", f"user{i}@example.com", created)
        for i in range(1, len(counts) + 1)
    ]
    rows = Rows(
        users=users,
        # Mail is forwarded to mailboxes: each user's first is verified and the default.
        mailboxes=[(i, email, key, True, True, created) for i, email, key, _ in users],
        api_keys=[(i, hash_key(key), created, None) for i, key in enumerate(keys, start=1)],
        addresses=_batches(_address_rows(counts, created)),
        bar=Progress("loading addresses", sum(counts), progress),
    )
    if db.backend == "sqlite":
        _load_sqlite(db, rows)
    else:
        asyncio.run(_load_postgres(db, rows))
    return keys


def _insert(table: str) -> str:
    columns = COLUMNS[table]
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


def _load_sqlite(db: Database, rows: Rows) -> None:
    conn = sqlite3.connect(db.url.split(":///", 1)[1], isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(_insert("users"), rows.users)
        conn.executemany(_insert("mailboxes"), rows.mailboxes)
        conn.executemany(_insert("api_keys"), rows.api_keys)
        for batch in rows.addresses:
            conn.executemany(_insert("addresses"), batch)
            rows.bar.add(len(batch))
        conn.execute("COMMIT")
        conn.execute("ANALYZE")
    finally:
        conn.close()


async def _load_postgres(db: Database, rows: Rows) -> None:
    conn = await asyncpg.connect(db.plain_url)
    try:
        async with conn.transaction():
            await conn.copy_records_to_table("users", records=rows.users, columns=COLUMNS["users"])
            await conn.execute(
                "SELECT setval(pg_get_serial_sequence('users', 'id'), (SELECT max(id) FROM users))"
            )
            for table in ("mailboxes", "api_keys"):
                records = rows.mailboxes if table == "mailboxes" else rows.api_keys
                await conn.copy_records_to_table(table, records=records, columns=COLUMNS[table])
            for batch in rows.addresses:
                await conn.copy_records_to_table(
                    "addresses", records=batch, columns=COLUMNS["addresses"]
                )
                rows.bar.add(len(batch))
        await conn.execute("ANALYZE")
    finally:
        await conn.close()


def load_peer(python: Path, db: Database, counts: Sequence[int]) -> list[str]:
    """The same accounts in the peer's Django models, through its own ORM (bulk_create)."""
    done = subprocess.run(
        [str(python), str(Path(__file__).with_name("peer_seed.py")), str(PEER_DIR)],
        input=json.dumps(list(counts)),
        env=system_env(db),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"seeding the peer failed: {done.stderr.strip()[-2000:]}")
    keys: list[str] = json.loads(done.stdout)
    return keys
