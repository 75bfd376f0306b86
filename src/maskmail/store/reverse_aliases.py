"""Reverse aliases: found or made, once per pair of relay address and outside sender."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import reverse
from maskmail.core.errors import AddressTaken
from maskmail.store.clock import now
from maskmail.store.driver import Driver, as_driver
from maskmail.store.statements import Statement

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
        return reverse.alias_address(self.alias, self.domain)


# Found or made in one round trip on PostgreSQL: the pair's row if there is one, else the
# row this statement inserts. Neither (an empty result) means a row for the pair was
# committed after the statement's snapshot, or the drawn alias is taken: the next round
# sees the former and draws the latter again. A statement alone is atomic, so the mail
# plane runs it in autocommit.
_FOUND_OR_MADE = Statement.per_dialect(
    postgresql="WITH f AS (SELECT alias, domain, created_time FROM reverse_aliases "
    "WHERE address_id = ?1 AND sender = ?2), "
    "m AS (INSERT INTO reverse_aliases (address_id, sender, alias, domain, created_time) "
    "SELECT ?1, ?2, ?3::varchar, ?4::varchar, ?5::bigint WHERE NOT EXISTS (SELECT 1 FROM f) "
    "ON CONFLICT DO NOTHING RETURNING alias, domain, created_time) "
    "SELECT * FROM f UNION ALL SELECT * FROM m",
)
# The mail plane's: a sender's reverse alias made only while its relay address is enabled
# and its owner not disabled, in the one statement or transaction that reads the address
# again before a forward (store/mailflow.py). Arguments: the address id, the sender's
# key, the alias, its domain and the time; nothing is written when the pair has a row or
# the alias is taken.
_MAKE_IF_ENABLED = (
    "INSERT INTO reverse_aliases (address_id, sender, alias, domain, created_time) "
    "SELECT a.id, {}, {}, {}, {} FROM addresses a JOIN users u ON u.id = a.user_id "
    "WHERE a.id = ?1 AND a.enabled AND NOT u.disabled ON CONFLICT DO NOTHING"
)
MAKE_IF_ENABLED = Statement.per_dialect(
    sqlite=_MAKE_IF_ENABLED.format("?2", "?3", "?4", "?5"),
    postgresql=_MAKE_IF_ENABLED.format("?2::varchar", "?3::varchar", "?4::varchar", "?5::bigint"),
)
_PAIR = Statement.portable(
    "SELECT alias, domain, created_time FROM reverse_aliases WHERE address_id = ? AND sender = ?"
)
_INSERT = Statement.portable(
    "INSERT INTO reverse_aliases (address_id, sender, alias, domain, created_time) "
    "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING alias, domain, created_time"
)


async def found_or_made(
    conn: AsyncConnection | Driver,
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
    can keep a row from being written. Every door calls this: the contacts route inside
    its SQLAlchemy transaction, the mail plane on a driver connection of its own.
    """
    driver = await as_driver(conn)
    key = reverse.sender_key(sender)
    for _ in range(MAX_ROUNDS):
        alias = reverse.generate_alias_local(token)
        if driver.dialect == "postgresql":
            rows = await driver.rows(_FOUND_OR_MADE, address_id, key, alias, domain, now())
        else:
            async with driver.writing():
                rows = await driver.rows(_PAIR, address_id, key) or await driver.rows(
                    _INSERT, address_id, key, alias, domain, now()
                )
        if rows:
            made_alias, made_domain, created = rows[0]
            return ReverseAlias(address_id, key, made_alias, made_domain, created)
    raise AddressTaken("could not make a reverse alias; try again")
