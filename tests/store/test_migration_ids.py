"""Migration 0013 on a database holding rows in every table at 0012: every row is kept,
the address counts' triggers still count, and from then on no id is handed out twice,
not even one that only a bounce (``bounces.mailbox_id``) or a tombstone still holds."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Connection, inspect, make_url, select, text

from maskmail.store.engine import create_engine
from maskmail.store.migrate import alembic_config, upgrade
from maskmail.store.tables import metadata
from tests.support import BACKENDS, fresh_database, kept_address_count

SEED = (
    "INSERT INTO users (id, email, email_key, created_time) VALUES "
    "(1, 'ann@example.com', 'ann@example.com', 1), (2, 'bob@example.com', 'bob@example.com', 1)",
    "INSERT INTO api_keys (id, user_id, key_hash, created_time) VALUES (1, 1, 'k1', 1)",
    "INSERT INTO addresses (id, user_id, address, domain, created_time) VALUES "
    "(1, 1, 'a1', 'relay.test', 1), (2, 1, 'a2', 'relay.test', 1), (3, 2, 'b1', 'relay.test', 1)",
    # Nine addresses were handed out in all; the newest six were deleted.
    "INSERT INTO tombstones (hash, created_time) VALUES "
    + ", ".join(f"('t{i}', 1)" for i in range(9)),
    "INSERT INTO subdomains (id, user_id, subdomain, created_time) VALUES (1, 1, 'ann', 1)",
    "INSERT INTO subdomain_names (user_id, created_time) VALUES (1, 1)",
    "INSERT INTO custom_domains (id, user_id, domain, ownership_token, dkim_selector, "
    "dkim_private_key, dkim_txt, created_time) VALUES (1, 2, 'bob.example', 't', 's', 'k', 'v', 1)",
    "INSERT INTO mailboxes (id, user_id, email, email_key, verified, is_default, created_time) "
    "VALUES (1, 1, 'ann@example.com', 'ann@example.com', true, true, 1), "
    "(2, 2, 'bob@example.com', 'bob@example.com', true, true, 1), "
    "(3, 1, 'ann@other.example', 'ann@other.example', true, false, 1)",
    "INSERT INTO address_mailboxes (address_id, mailbox_id) VALUES (1, 3)",
    "INSERT INTO mailbox_keys (mailbox_id, public_key, fingerprint, created_time) "
    "VALUES (3, 'key', 'fp', 1)",
    "INSERT INTO web_sessions (id, user_id, token_hash, created_time, expires_time) "
    "VALUES (1, 1, 's1', 1, 2)",
    "INSERT INTO reverse_aliases (id, address_id, sender, alias, domain, created_time) "
    "VALUES (1, 1, 'x@outside.example', 'r1', 'relay.test', 1)",
    # The bounce of a copy to Ann's mailbox 4, deleted since.
    "INSERT INTO bounces (id, address_id, received_time, kind, status, mailbox_id) "
    "VALUES (1, 2, 1, 'hard', '5.1.1', 4)",
    "INSERT INTO daily_activity (address_id, day, num_forwarded) VALUES (1, 5, 2)",
    "INSERT INTO first_mail_addresses (address_id, user_id, created_time) VALUES (3, 2, 1)",
)
# On PostgreSQL the sequences stand where those rows and the deleted ones left them.
PG_SEQUENCES = tuple(
    f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), {last})"
    for name, last in (
        ("users", 2),
        ("api_keys", 1),
        ("addresses", 9),
        ("subdomains", 1),
        ("custom_domains", 1),
        ("mailboxes", 4),
        ("web_sessions", 1),
        ("reverse_aliases", 1),
        ("bounces", 1),
    )
)


async def _run(url: str, *statements: str) -> None:
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.begin() as conn:
            for statement in statements:
                await conn.execute(text(statement))
    finally:
        await engine.dispose()


Rows = dict[str, list[tuple[tuple[str, object], ...]]]


def _columns(sync_conn: Connection) -> dict[str, set[str]]:
    found = inspect(sync_conn)
    return {name: {c["name"] for c in found.get_columns(name)} for name in found.get_table_names()}


async def _everything(url: str) -> Rows:
    """Every row of every table but the version, as (column, value) pairs in a stable
    order: the tables and columns the database has at its revision (later migrations
    add more)."""
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.connect() as conn:
            present = await conn.run_sync(_columns)
            everything: Rows = {}
            for t in metadata.sorted_tables:
                if t.name in present:
                    query = select(*(c for c in t.c if c.name in present[t.name]))
                    rows = (
                        tuple(zip(r._fields, r, strict=True)) for r in await conn.execute(query)
                    )
                    everything[t.name] = sorted(rows, key=repr)
            return everything
    finally:
        await engine.dispose()


def _narrowed(
    rows: list[tuple[tuple[str, object], ...]], like: list[tuple[tuple[str, object], ...]]
) -> list[tuple[tuple[str, object], ...]]:
    """``rows`` with only the columns ``like``'s rows have (columns added since dropped)."""
    if not like:
        return rows
    names = {name for name, _ in like[0]}
    return sorted((tuple(p for p in row if p[0] in names) for row in rows), key=repr)


def _kept(url: str, before: Rows) -> bool:
    """Every table that was there holds the same rows; tables added since are empty."""
    after = asyncio.run(_everything(url))
    added = set(after) - set(before)
    return {name: _narrowed(after[name], before[name]) for name in before} == before and not any(
        after[name] for name in added
    )


async def _add_after_deletes(url: str) -> tuple[int, int, int]:
    """Delete the newest address and mailbox, then make one of each and a key for Bob:
    their ids, and Ann's kept address count after it all."""
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("DELETE FROM addresses WHERE id = 3"))
            await conn.execute(text("DELETE FROM mailboxes WHERE id = 3"))
            address = await conn.scalar(
                text(
                    "INSERT INTO addresses (user_id, address, domain, created_time) "
                    "VALUES (1, 'a3', 'relay.test', 1) RETURNING id"
                )
            )
            mailbox = await conn.scalar(
                text(
                    "INSERT INTO mailboxes (user_id, email, email_key, created_time) "
                    "VALUES (2, 'bob@other.example', 'bob@other.example', 1) RETURNING id"
                )
            )
            return int(address or 0), int(mailbox or 0), await kept_address_count(conn, 1)
    finally:
        await engine.dispose()


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_row_is_kept_and_no_id_comes_back(backend: str, tmp_path: Path) -> None:
    with fresh_database(backend, tmp_path) as url:
        command.upgrade(alembic_config(url), "0012")
        asyncio.run(_run(url, *SEED, *(PG_SEQUENCES if backend == "postgres" else ())))
        before = asyncio.run(_everything(url))
        assert all(before.values()), [name for name, rows in before.items() if not rows]
        upgrade(url)
        assert _kept(url, before)
        address, mailbox, ann_count = asyncio.run(_add_after_deletes(url))
        # Above the nine addresses the tombstones tell of, and the mailbox a bounce holds.
        assert (address, mailbox) == (10, 5)
        # The triggers made anew still count: Ann had 2, gained 1.
        assert ann_count == 3


def test_the_downgrade_keeps_every_row(tmp_path: Path) -> None:
    with fresh_database("sqlite", tmp_path) as url:
        command.upgrade(alembic_config(url), "0012")
        asyncio.run(_run(url, *SEED))
        before = asyncio.run(_everything(url))
        upgrade(url)
        command.downgrade(alembic_config(url), "0012")
        assert asyncio.run(_everything(url)) == before
        upgrade(url)
        assert _kept(url, before)


def test_rows_left_pointing_at_deleted_rows_go(tmp_path: Path) -> None:
    """A row whose parent was deleted on a connection without foreign keys (the sqlite3
    shell's default) would have stopped the copy; it goes, as the cascade would have
    taken it, with the rows that hang off it, and everything else stays."""
    with fresh_database("sqlite", tmp_path) as url:
        command.upgrade(alembic_config(url), "0012")
        asyncio.run(_run(url, *SEED))
        before = asyncio.run(_everything(url))
        database = make_url(url).database
        assert database is not None
        with closing(sqlite3.connect(database)) as shell:
            shell.execute("INSERT INTO daily_activity (address_id, day) VALUES (77, 1)")
            shell.execute(
                "INSERT INTO addresses (id, user_id, address, domain, created_time) "
                "VALUES (8, 66, 'gone', 'relay.test', 1)"
            )
            shell.execute("INSERT INTO daily_activity (address_id, day) VALUES (8, 1)")
            shell.commit()
        upgrade(url)
        assert _kept(url, before)
