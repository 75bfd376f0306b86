"""Reverse aliases: found or made, once per pair of relay address and outside sender."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import reverse
from maskmail.core.errors import AddressTaken
from maskmail.store.clock import now
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


async def _find_pair(conn: AsyncConnection, address_id: int, sender: str) -> ReverseAlias | None:
    row = (
        await conn.execute(
            select(*_columns).where(
                reverse_aliases.c.address_id == address_id, reverse_aliases.c.sender == sender
            )
        )
    ).first()
    return None if row is None else _record(row)


async def reverse_alias_for(
    conn: AsyncConnection,
    address_id: int,
    sender: str,
    *,
    domain: str,
    token: reverse.TokenSource = secrets.token_bytes,
) -> ReverseAlias:
    """The reverse alias for this relay address and sender, made on first use.

    Uniqueness rests on the constraints: when a concurrent delivery inserts the same pair
    first, the insert fails and the winner's row is read back, so both agree.
    """
    key = reverse.sender_key(sender)
    for _ in range(MAX_ROUNDS):
        found = await _find_pair(conn, address_id, key)
        if found is not None:
            return found
        alias = reverse.generate_alias_local(token)
        created = now()
        try:
            async with conn.begin_nested():
                await conn.execute(
                    insert(reverse_aliases).values(
                        address_id=address_id,
                        sender=key,
                        alias=alias,
                        domain=domain,
                        created_time=created,
                    )
                )
        except IntegrityError:
            continue
        return ReverseAlias(
            address_id=address_id, sender=key, alias=alias, domain=domain, created_time=created
        )
    raise AddressTaken("could not make a reverse alias; try again")


async def find_reverse_alias(conn: AsyncConnection, alias: str) -> ReverseAlias | None:
    """The reverse alias with this local part, for the replies that come back to it."""
    row = (
        await conn.execute(select(*_columns).where(reverse_aliases.c.alias == alias.lower()))
    ).first()
    return None if row is None else _record(row)
