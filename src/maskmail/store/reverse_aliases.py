"""Reverse aliases: found or made, once per pair of relay address and outside sender."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import reverse
from maskmail.core.errors import AddressTaken
from maskmail.store.clock import now
from maskmail.store.raw import Raw, Sql, of_connection
from maskmail.store.tables import reverse_aliases

# A collision of two 120-bit draws never happens; a row made concurrently for the same
# pair does, and costs one more round.
MAX_ROUNDS = 5


@dataclass(frozen=True, slots=True)
class ReverseAlias:
    address_id: int
    sender: str
    alias: str
    domain: str
    created_time: int

    @property
    def full_address(self) -> str:
        return f"{self.alias}@{self.domain}"


def _record(row: Row[Any]) -> ReverseAlias:
    return ReverseAlias(
        address_id=row.address_id,
        sender=row.sender,
        alias=row.alias,
        domain=row.domain,
        created_time=row.created_time,
    )


_columns = [
    reverse_aliases.c.address_id,
    reverse_aliases.c.sender,
    reverse_aliases.c.alias,
    reverse_aliases.c.domain,
    reverse_aliases.c.created_time,
]


# Found or made in one round trip on PostgreSQL: the pair's row if there is one, else the
# row this statement inserts. Neither (an empty result) means a row for the pair was
# committed after the statement's snapshot, or the drawn alias is taken: the next round
# sees the former and draws the latter again. A statement alone is atomic, so the mail
# plane runs it in autocommit.
_FOUND_OR_MADE = Sql(
    "",
    "WITH f AS (SELECT alias, domain, created_time FROM reverse_aliases "
    "WHERE address_id = $1 AND sender = $2), "
    "m AS (INSERT INTO reverse_aliases (address_id, sender, alias, domain, created_time) "
    "SELECT $1, $2, $3::varchar, $4::varchar, $5::bigint WHERE NOT EXISTS (SELECT 1 FROM f) "
    "ON CONFLICT DO NOTHING RETURNING alias, domain, created_time) "
    "SELECT * FROM f UNION ALL SELECT * FROM m",
)
_PAIR = Sql.same(
    "SELECT alias, domain, created_time FROM reverse_aliases WHERE address_id = ? AND sender = ?"
)
_INSERT = Sql.same(
    "INSERT INTO reverse_aliases (address_id, sender, alias, domain, created_time) "
    "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING alias, domain, created_time"
)


async def found_or_made(
    raw: Raw,
    address_id: int,
    sender: str,
    *,
    domain: str,
    token: reverse.TokenSource = secrets.token_bytes,
) -> ReverseAlias:
    """The reverse alias for this relay address and sender, made on first use.

    Uniqueness rests on the constraints: when a concurrent delivery inserts the same pair
    first, this insert writes nothing (ON CONFLICT DO NOTHING rather than a SAVEPOINT per
    try) and the winner's row is read in the next round, so both agree. A row not written
    for a colliding alias is simply drawn again. On SQLite the read and the insert share
    one write transaction (the caller's, or one of their own), so only a colliding alias
    can keep a row from being written.
    """
    key = reverse.sender_key(sender)
    for _ in range(MAX_ROUNDS):
        alias = reverse.generate_alias_local(token)
        if raw.dialect == "postgresql":
            rows = await raw.rows(_FOUND_OR_MADE, address_id, key, alias, domain, now())
        else:
            async with raw.writing():
                rows = await raw.rows(_PAIR, address_id, key) or await raw.rows(
                    _INSERT, address_id, key, alias, domain, now()
                )
        if rows:
            made_alias, made_domain, created = rows[0]
            return ReverseAlias(address_id, key, made_alias, made_domain, created)
    raise AddressTaken("could not make a reverse alias; try again")


async def reverse_alias_for(
    conn: AsyncConnection,
    address_id: int,
    sender: str,
    *,
    domain: str,
    token: reverse.TokenSource = secrets.token_bytes,
) -> ReverseAlias:
    """``found_or_made`` inside the caller's (write) transaction."""
    return await found_or_made(
        await of_connection(conn), address_id, sender, domain=domain, token=token
    )


async def find_reverse_alias(conn: AsyncConnection, alias: str) -> ReverseAlias | None:
    """The reverse alias with this local part, for the replies that come back to it."""
    row = (
        await conn.execute(select(*_columns).where(reverse_aliases.c.alias == alias.lower()))
    ).first()
    return None if row is None else _record(row)
