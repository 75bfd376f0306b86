"""What the mail plane reads and counts: a recipient with its owner, and verdict counters.

The statements are built once, with bound parameters: per message, building them and
their cache keys cost more than the database took to run them (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from functools import cache
from typing import get_args

from sqlalchemy import Update, bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from maskmail.core import reverse
from maskmail.core.records import RelayAddress
from maskmail.core.verdict import Counter
from maskmail.store.addresses import ADDRESS_COLUMNS, to_record
from maskmail.store.engine import transaction
from maskmail.store.reverse_aliases import reverse_alias_for
from maskmail.store.tables import addresses, reverse_aliases, users

# The address in RelayAddress's field order, then its owner's mailbox: one round trip.
_RECIPIENT = (
    select(*ADDRESS_COLUMNS, users.c.email)
    .join_from(addresses, users, addresses.c.user_id == users.c.id)
    .where(addresses.c.address == bindparam("local"), addresses.c.domain == bindparam("domain"))
)
_PAIR = select(reverse_aliases.c.alias, reverse_aliases.c.domain).where(
    reverse_aliases.c.address_id == bindparam("address_id"),
    reverse_aliases.c.sender == bindparam("sender"),
)
_COUNTERS: tuple[Counter, ...] = get_args(Counter)


@dataclass(frozen=True, slots=True)
class Recipient:
    address: RelayAddress
    owner_mailbox: str


async def find_recipient(conn: AsyncConnection, local: str, domain: str) -> Recipient | None:
    """The live relay address ``local@domain`` and its owner's real mailbox."""
    row = (
        await conn.execute(_RECIPIENT, {"local": local.lower(), "domain": domain.lower()})
    ).first()
    if row is None:
        return None
    return Recipient(to_record(row[:-1]), str(row[-1]))


@cache
def _increment(counters: tuple[Counter, ...]) -> Update:
    """One statement adding one to each of these counters: they move together, atomically,
    and never by read-modify-write."""
    return (
        update(addresses)
        .where(addresses.c.id == bindparam("address_id"))
        .values({addresses.c[name]: addresses.c[name] + 1 for name in counters})
    )


def _one_statement(engine: AsyncEngine) -> AbstractAsyncContextManager[AsyncConnection]:
    """A block that runs a single atomic statement (or statements that are each safe alone).

    On PostgreSQL it runs in autocommit, as read-only blocks do: BEGIN and COMMIT would be
    two round trips more, and a round trip was the largest cost per message there
    (docs/benchmarks.md). SQLite still takes its write lock at BEGIN.
    """
    return transaction(engine, readonly=engine.dialect.name == "postgresql")


@dataclass(frozen=True, slots=True)
class ReplyRoute:
    """Where a message to a reverse alias goes, and who may send it."""

    address: RelayAddress
    owner_mailbox: str
    # The owner chose to send their display name with replies.
    show_name: bool
    # The outside sender the reverse alias stands for.
    outside: str


_REPLY_ROUTE = select(
    *ADDRESS_COLUMNS, users.c.email, users.c.show_name, reverse_aliases.c.sender
).select_from(
    reverse_aliases.join(addresses, addresses.c.id == reverse_aliases.c.address_id).join(
        users, users.c.id == addresses.c.user_id
    )
)


async def find_reply_route(conn: AsyncConnection, alias: str, domain: str) -> ReplyRoute | None:
    """The relay address, owner and outside sender behind the reverse alias ``alias@domain``."""
    row = (
        await conn.execute(
            _REPLY_ROUTE.where(
                reverse_aliases.c.alias == alias.lower(),
                reverse_aliases.c.domain == domain.lower(),
            )
        )
    ).first()
    if row is None:
        return None
    width = len(ADDRESS_COLUMNS)
    return ReplyRoute(
        address=to_record(row[:width]),
        owner_mailbox=str(row[width]),
        show_name=bool(row[width + 1]),
        outside=str(row[width + 2]),
    )


async def count_all(conn: AsyncConnection, address_id: int, counters: Iterable[Counter]) -> None:
    """Add one to each counter, in one statement."""
    wanted = tuple(c for c in _COUNTERS if c in set(counters))
    if wanted:
        await conn.execute(_increment(wanted), {"address_id": address_id})


async def count(engine: AsyncEngine, address_id: int, counters: Iterable[Counter]) -> None:
    """Add one to each counter, in a block of its own."""
    async with _one_statement(engine) as conn:
        await count_all(conn, address_id, counters)


async def reverse_alias(engine: AsyncEngine, address_id: int, sender: str, *, domain: str) -> str:
    """The reverse alias for this relay address and sender, as a full address.

    Nearly always it exists already: it is read in a read-only transaction, and only a
    missing one is made in a write transaction (which on SQLite queues for the write lock).
    """
    async with transaction(engine, readonly=True) as conn:
        row = (
            await conn.execute(
                _PAIR, {"address_id": address_id, "sender": reverse.sender_key(sender)}
            )
        ).first()
    if row is not None:
        return f"{row.alias}@{row.domain}"
    # Each statement of reverse_alias_for is safe alone: an insert that writes nothing on
    # any conflict, and reads of committed rows.
    async with _one_statement(engine) as conn:
        made = await reverse_alias_for(conn, address_id, sender, domain=domain)
    return made.full_address
