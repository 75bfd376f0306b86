"""The hot requests in as few statements as possible, answered as the wire's JSON bytes.

A page is one statement (key check, total and rows); the full listing is read in
id-ordered chunks (keyset), so a list of any length is never held in memory at once.
The database writes each address as ``api/schemas.address_json``'s keys, in its order,
and joins a chunk's into one value: 1,000 rows of values through the driver, and dicts
and JSON made of them here, cost the server more than the database took to write them.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from maskmail.core import addresses as rules
from maskmail.core.errors import AddressTaken, LimitReached, UserNotFound
from maskmail.core.records import RelayAddress
from maskmail.store.clock import now
from maskmail.store.raw import Raw, Row, Sql

# Each draw from 36^8 collides with an existing address with negligible probability;
# this many collisions in a row means something else is wrong.
MAX_DRAWS = 20

FULL_ADDRESS = "a.address || '@' || coalesce(nullif(a.subdomain, '') || '.', '') || a.domain"
# The keys of api/schemas.address_json, in its order (full_address follows).
FIELDS = [
    "id",
    "address",
    "enabled",
    "block_spam",
    "description",
    "created_time",
    "updated_time",
    "num_forwarded",
    "num_blocked",
    "num_replied",
    "num_spam",
    "domain",
    "subdomain",
]


def _sqlite_json() -> str:
    def value(name: str) -> str:
        if name in {"enabled", "block_spam"}:  # stored as 0/1
            return f"json(CASE WHEN a.{name} THEN 'true' ELSE 'false' END)"
        return f"a.{name}"

    pairs = [f"'{name}', {value(name)}" for name in FIELDS]
    return f"json_object({', '.join(pairs)}, 'full_address', {FULL_ADDRESS})"


_SQLITE_JSON = _sqlite_json()


def _pg_json() -> str:
    """The same JSON by text concatenation: for 1,000 addresses it cost PostgreSQL 2.8-2.9
    ms of CPU against 3.2-3.3 ms for row_to_json (``python -m bench.statement_cost``)."""

    def value(name: str) -> str:
        if name in {"address", "description", "domain"}:
            return f"to_json(a.{name})::text"
        if name == "subdomain":
            return "coalesce(to_json(a.subdomain)::text, 'null')"
        if name in {"enabled", "block_spam"}:
            return f"CASE WHEN a.{name} THEN 'true' ELSE 'false' END"
        if name == "updated_time":
            return "coalesce(a.updated_time::text, 'null')"
        return f"a.{name}::text"

    pairs = [f"'{',' if n else '{'}\"{name}\":' || {value(name)}" for n, name in enumerate(FIELDS)]
    return " || ".join([*pairs, f"',\"full_address\":' || to_json({FULL_ADDRESS})::text || '}}'"])


_PG_JSON = _pg_json()

_KEY = "SELECT user_id FROM api_keys WHERE key_hash = ? AND revoked_time IS NULL"
_KEY_AND_TOTAL = (
    "SELECT k.user_id, u.address_count FROM api_keys k JOIN users u ON u.id = k.user_id "
    "WHERE k.key_hash = ? AND k.revoked_time IS NULL"
)


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
    row an OFFSET skipped (1.2 s for the last page of 100,000 addresses).
    """
    return (
        "SELECT CAST(group_concat(j, ',') AS BLOB), count(*), max(id) "
        f"FROM (SELECT a.id, {_SQLITE_JSON} AS j FROM addresses a "
        f"WHERE a.user_id = {owner} AND a.id > {after} ORDER BY a.id {tail})",
        "SELECT convert_to(string_agg(j, ',' ORDER BY id), 'UTF8'), count(*), max(id) "
        f"FROM (SELECT a.id, {_PG_JSON} AS j FROM (SELECT * FROM addresses a "
        f"WHERE a.user_id = {owner} AND (a.user_id, a.id) > ({owner}, {after}) "
        f"ORDER BY a.user_id, a.id {tail}) a) w",
    )


def _with_owner(after: str, tail: str, *, count: bool) -> Sql:
    """The key check first, in the same statement as the data: one row of (items, n,
    last, owner, total), or no row at all for an unknown or revoked key."""
    # The total is the count the database keeps per owner (migration 0005): counting the
    # rows walked all of the owner's index entries on every page.
    total = "o.address_count" if count else "NULL"
    head = f"WITH o AS MATERIALIZED ({_KEY_AND_TOTAL if count else _KEY}), c AS MATERIALIZED "
    sqlite, postgresql = _joined("(SELECT user_id FROM o)", after, tail)
    return Sql.each(
        *(
            f"{head}({inner}) SELECT c.*, o.user_id, {total} FROM o CROSS JOIN c"
            for inner in (sqlite, postgresql)
        )
    )


PAGE = _with_owner("0", "LIMIT ? OFFSET ?", count=True)
FIRST_CHUNK = _with_owner("?", "LIMIT ?", count=False)
# PostgreSQL's text numbered by hand: it names the owner twice.
CHUNK = Sql(_joined("?", "?", "LIMIT ?")[0], _joined("$1", "$2", "LIMIT $3")[1])


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


async def page(raw: Raw, key_hash: str, *, offset: int, limit: int) -> Page | None:
    """The key's owner, their total and one page; None for an unknown or revoked key."""
    found = await raw.rows(PAGE, key_hash, limit, offset)
    if not found:
        return None
    items, _, _, user_id, total = found[0]
    return Page(int(user_id), int(total), items or b"")


async def first_chunk(raw: Raw, key_hash: str, size: int) -> Chunk | None:
    """The key's owner and their oldest ``size`` addresses; None for an unknown key."""
    found = await raw.bulk_rows(FIRST_CHUNK, key_hash, 0, size)
    if not found:
        return None
    items, n, last, user_id, _ = found[0]
    return Chunk(int(user_id), items or b"", int(n), int(last or 0))


async def next_chunk(raw: Raw, user_id: int, after: int, size: int) -> Chunk:
    """The owner's next ``size`` addresses with an id above ``after``."""
    items, n, last = (await raw.bulk_rows(CHUNK, user_id, after, size))[0]
    return Chunk(user_id, items or b"", int(n), int(last or after))


_OWNER_OF_KEY = Sql.same(_KEY)
_USER = Sql.same("SELECT id FROM users WHERE id = ?")
_LOCK_USER = Sql.each(_USER.sqlite, _USER.sqlite + " FOR UPDATE")
_COUNT = Sql.same("SELECT count(*) FROM addresses WHERE user_id = ?")
_TOMBSTONE = Sql.same(
    "INSERT INTO tombstones (hash, created_time) VALUES (?, ?) ON CONFLICT DO NOTHING RETURNING 1"
)
_RECORD_COLUMNS = (
    "id, user_id, address, domain, subdomain, enabled, block_spam, description, created_time, "
    "updated_time, num_forwarded, num_blocked, num_replied, num_spam"
)
_INSERT = Sql.same(
    "INSERT INTO addresses (user_id, address, domain, subdomain, enabled, block_spam, "
    "description, created_time, updated_time, num_forwarded, num_blocked, num_replied, "
    "num_spam) VALUES (?, ?, ?, NULL, TRUE, FALSE, ?, ?, NULL, 0, 0, 0, 0) "
    f"ON CONFLICT DO NOTHING RETURNING {_RECORD_COLUMNS}"
)


async def owner_of_key(raw: Raw, key_hash: str) -> int | None:
    found = await raw.rows(_OWNER_OF_KEY, key_hash)
    return int(found[0][0]) if found else None


async def create(
    raw: Raw,
    user_id: int,
    *,
    domain: str,
    length: int,
    limit: int = 0,
    description: str = "",
    choose: rules.Chooser = secrets.choice,
) -> RelayAddress:
    """A new random address for the user, never one handed out before; run it inside
    ``raw.writing()``.

    With a limit, the owner's row is locked first, so that concurrent creates for one
    user queue up and the limit check and the insert see the same world (SQLite's BEGIN
    IMMEDIATE already serialises writers; FOR UPDATE does it on PostgreSQL). Without a
    limit there is nothing to check, and uniqueness rests on the constraints, so creates
    for one user need not queue.
    """
    if not await raw.rows(_LOCK_USER if limit > 0 else _USER, user_id):
        raise UserNotFound(f"no user with id {user_id}")
    if limit > 0 and (await raw.rows(_COUNT, user_id))[0][0] >= limit:
        raise LimitReached(
            f"this account has reached its limit of {limit} addresses; "
            "delete one you no longer use to make room",
            {"limit": limit},
        )
    created = now()
    # ON CONFLICT DO NOTHING rather than a SAVEPOINT per draw: a collision is a row not
    # written, not an error to roll back, which saves two round trips per create.
    for _ in range(MAX_DRAWS):
        local = rules.generate_local_part(length, choose)
        tombstone = rules.tombstone(rules.full_address(local, domain))
        if not await raw.rows(_TOMBSTONE, tombstone, created):
            continue  # handed out before
        made = await raw.rows(_INSERT, user_id, local, domain, description, created)
        if made:
            return record(made[0])
    raise AddressTaken("could not find a free address; try again")


def record(row: Row) -> RelayAddress:
    """An address from the driver's row, columns in RelayAddress's field order."""
    # SQLite returns its booleans as 0/1.
    return RelayAddress(
        row[0], row[1], row[2], row[3], row[4], bool(row[5]), bool(row[6]), *row[7:]
    )


# PostgreSQL only: key check, tombstone and address in one statement, atomic on its own.
# No row back means an unknown key or a drawn address that was handed out before.
_CREATE_FOR_KEY = Sql.each(
    "",
    f"WITH o AS ({_KEY}), t AS (INSERT INTO tombstones (hash, created_time) "
    "SELECT ?, ? WHERE EXISTS (SELECT 1 FROM o) ON CONFLICT DO NOTHING RETURNING 1) "
    "INSERT INTO addresses (user_id, address, domain, subdomain, enabled, block_spam, "
    "description, created_time, updated_time, num_forwarded, num_blocked, num_replied, "
    "num_spam) SELECT o.user_id, ?, ?, NULL, TRUE, FALSE, '', ?, NULL, 0, 0, 0, 0 "
    f"FROM o CROSS JOIN t ON CONFLICT DO NOTHING RETURNING {_RECORD_COLUMNS}",
)


async def create_for_key(
    raw: Raw,
    key_hash: str,
    *,
    domain: str,
    length: int,
    limit: int = 0,
    choose: rules.Chooser = secrets.choice,
) -> RelayAddress | None:
    """A new address for the key's owner (see ``create``); None for an unknown key.

    Without a limit on PostgreSQL this is one round trip: a statement that checks the key
    and writes tombstone and address together needs no BEGIN and COMMIT around it (the
    POST was six round trips). Otherwise it is ``create`` in a write transaction.
    """
    if raw.dialect == "postgresql" and limit <= 0:
        created = now()
        for _ in range(MAX_DRAWS):
            local = rules.generate_local_part(length, choose)
            tombstone = rules.tombstone(rules.full_address(local, domain))
            made = await raw.rows(
                _CREATE_FOR_KEY, key_hash, tombstone, created, local, domain, created
            )
            if made:
                return record(made[0])
            if await owner_of_key(raw, key_hash) is None:
                return None
        raise AddressTaken("could not find a free address; try again")
    async with raw.writing():
        user_id = await owner_of_key(raw, key_hash)
        if user_id is None:
            return None
        return await create(raw, user_id, domain=domain, length=length, limit=limit, choose=choose)
