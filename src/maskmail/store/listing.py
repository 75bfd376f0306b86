"""An owner's addresses as the wire's JSON bytes: one page, or the whole list in chunks.

A page is one statement (key check, total and rows); the full listing is read in
id-ordered chunks (keyset), so a list of any length is never held in memory at once.
Each is a script for ``DriverPool.run`` (store/driver.py).
The database writes each address's JSON, keys and order from
``core.records.PRIVATE_EMAIL_FIELDS``, and joins a chunk's into one value: rows of values
through the driver, and dicts and JSON made of them here, cost the server more than
the database took to write them.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Boolean, String

from maskmail.core.records import PRIVATE_EMAIL_FIELDS
from maskmail.store.accounts import LIVE_KEY
from maskmail.store.address_counts import total_sql
from maskmail.store.addresses import full_address_sql
from maskmail.store.statements import Script, Statement
from maskmail.store.tables import addresses

FULL_ADDRESS = full_address_sql("a")
# The stored fields; full_address is computed (FULL_ADDRESS) and comes last.
STORED_FIELDS = PRIVATE_EMAIL_FIELDS[:-1]
assert PRIVATE_EMAIL_FIELDS[-1] == "full_address"


def sqlite_json() -> str:
    """One address as a JSON object, by SQLite's json_object."""

    def value(name: str) -> str:
        # Stored as 0/1. json('true') is constant, so SQLite parses it once per statement,
        # not once per row as json(CASE ...) would.
        if isinstance(addresses.c[name].type, Boolean):
            return f"CASE WHEN a.{name} THEN json('true') ELSE json('false') END"
        return f"a.{name}"

    pairs = [f"'{name}', {value(name)}" for name in STORED_FIELDS]
    return f"json_object({', '.join(pairs)}, 'full_address', {FULL_ADDRESS})"


def postgresql_json() -> str:
    """The same JSON by text concatenation, which cost PostgreSQL less CPU than
    row_to_json or json_build_object (``python -m bench.statement_cost``)."""

    def value(name: str) -> str:
        column = addresses.c[name]
        if isinstance(column.type, Boolean):
            return f"CASE WHEN a.{name} THEN 'true' ELSE 'false' END"
        text = f"to_json(a.{name})::text" if isinstance(column.type, String) else f"a.{name}::text"
        return f"coalesce({text}, 'null')" if column.nullable else text

    pairs = [
        f"'{',' if n else '{'}\"{name}\":' || {value(name)}" for n, name in enumerate(STORED_FIELDS)
    ]
    return " || ".join([*pairs, f"',\"full_address\":' || to_json({FULL_ADDRESS})::text || '}}'"])


def _joined(owner: str, after: str, tail: str) -> tuple[str, str]:
    """One row: the JSON of the owner's addresses with an id above ``after`` (ordered by
    id, then ``tail``) joined by commas, as UTF-8 bytes, how many, and the last id; for
    SQLite and for PostgreSQL.

    SQLite 3.40 has no ORDER BY inside an aggregate; it aggregates an ordered subquery in
    its order. PostgreSQL is asked for a range of the (user_id, id) index: written as
    ``user_id = owner AND id > after``, the generic plan of a table with few owners walked
    the primary key in id order and filtered by owner, reading every newer address in the
    table to fill a chunk; no plan can serve the row comparison that way. Its JSON is
    written a level above the LIMIT: written beside it, PostgreSQL wrote the JSON of every
    row an OFFSET skipped.
    """
    return (
        "SELECT CAST(group_concat(j, ',') AS BLOB), count(*), max(id) "
        f"FROM (SELECT a.id, {sqlite_json()} AS j FROM addresses a "
        f"WHERE a.user_id = {owner} AND a.id > {after} ORDER BY a.id {tail})",
        "SELECT convert_to(string_agg(j, ',' ORDER BY id), 'UTF8'), count(*), max(id) "
        f"FROM (SELECT a.id, {postgresql_json()} AS j FROM (SELECT * FROM addresses a "
        f"WHERE a.user_id = {owner} AND (a.user_id, a.id) > ({owner}, {after}) "
        f"ORDER BY a.user_id, a.id {tail}) a) w",
    )


_KEY_AND_TOTAL = f"SELECT k.user_id, {total_sql('k.user_id')} AS total FROM ({LIVE_KEY}) k"


def _with_owner(after: str, tail: str, *, count: bool) -> Statement:
    """The key check first, in the same statement as the data: one row of (items, n,
    last, owner, total), or no row at all for an unknown or revoked key."""
    # The total is the count the database keeps per owner (store/address_counts.py):
    # counting the rows walked all of the owner's index entries on every page.
    total = "o.total" if count else "NULL"
    head = f"WITH o AS MATERIALIZED ({_KEY_AND_TOTAL if count else LIVE_KEY}), c AS MATERIALIZED "
    sqlite, postgresql = _joined("(SELECT user_id FROM o)", after, tail)
    return Statement.per_dialect(
        sqlite=f"{head}({sqlite}) SELECT c.*, o.user_id, {total} FROM o CROSS JOIN c",
        postgresql=f"{head}({postgresql}) SELECT c.*, o.user_id, {total} FROM o CROSS JOIN c",
    )


PAGE = _with_owner("0", "LIMIT ? OFFSET ?", count=True)
FIRST_CHUNK = _with_owner("?", "LIMIT ?", count=False)
# PostgreSQL's text names the owner twice: ?1 is the first argument again.
CHUNK = Statement.per_dialect(
    sqlite=_joined("?", "?", "LIMIT ?")[0], postgresql=_joined("?1", "?2", "LIMIT ?3")[1]
)


@dataclass(frozen=True, slots=True)
class Page:
    user_id: int
    count: int
    items: bytes
    """The page's addresses as JSON joined by commas (empty for none)."""


@dataclass(frozen=True, slots=True)
class Chunk:
    user_id: int
    items: bytes
    """Addresses as JSON joined by commas (empty for none)."""
    size: int
    last_id: int


def page(key_hash: str, *, offset: int, limit: int) -> Script[Page | None]:
    """The key's owner, their total and one page; None for an unknown or revoked key."""
    found = yield PAGE, (key_hash, limit, offset)
    if not found:
        return None
    items, _, _, user_id, total = found[0]
    return Page(int(user_id), int(total), items or b"")


def first_chunk(key_hash: str, size: int) -> Script[Chunk | None]:
    """The key's owner and their oldest ``size`` addresses; None for an unknown key. Its
    statement takes milliseconds: run it with ``bulk=True``."""
    found = yield FIRST_CHUNK, (key_hash, 0, size)
    if not found:
        return None
    items, n, last, user_id, _ = found[0]
    return Chunk(int(user_id), items or b"", int(n), int(last or 0))


def next_chunk(user_id: int, after: int, size: int) -> Script[Chunk]:
    """The owner's next ``size`` addresses with an id above ``after`` (``bulk=True``)."""
    found = yield CHUNK, (user_id, after, size)
    items, n, last = found[0]
    return Chunk(user_id, items or b"", int(n), int(last or after))
