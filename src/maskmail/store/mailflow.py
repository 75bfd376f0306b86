"""What the mail plane reads and writes per message: a recipient with its owner (and the
reverse alias already made for the sender at hand), and verdict counters.

The forward path's statements run on the driver (store/raw.py), as the API's hot routes
do: through SQLAlchemy's async layer each one cost a greenlet switch and an execution
context, about a quarter of the CPU per message (docs/benchmarks.md). Connections still
come from SQLAlchemy's pool, and a database outage is still StoreUnavailable (SMTP 451).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import cache
from typing import get_args

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import reverse
from maskmail.core.records import RelayAddress
from maskmail.core.verdict import Counter
from maskmail.store import reverse_aliases as aliases
from maskmail.store.addresses import ADDRESS_COLUMNS, to_record
from maskmail.store.raw import Raw, Sql
from maskmail.store.tables import addresses, reverse_aliases, users
from maskmail.store.wire import record

_COUNTERS: tuple[Counter, ...] = get_args(Counter)

# The address in RelayAddress's field order, then its owner's mailbox: one round trip.
_ADDRESS = ", ".join(f"a.{column.name}" for column in ADDRESS_COLUMNS)
_JOINED = "FROM addresses a JOIN users u ON u.id = a.user_id"
_OF = "WHERE a.address = ? AND a.domain = ?"
_RECIPIENT = Sql.same(f"SELECT {_ADDRESS}, u.email {_JOINED} {_OF}")
# The same, and the reverse alias of one sender if it was made already: at DATA the
# message's sender is known, and nearly every forward needs its alias.
_RECIPIENT_AND_ALIAS = Sql.same(
    f"SELECT {_ADDRESS}, u.email, r.alias, r.domain {_JOINED} "
    f"LEFT JOIN reverse_aliases r ON r.address_id = a.id AND r.sender = ? {_OF}"
)
_WIDTH = len(ADDRESS_COLUMNS)


@dataclass(frozen=True, slots=True)
class Recipient:
    address: RelayAddress
    owner_mailbox: str
    # The reverse alias for the sender asked about, when it exists already.
    reverse_alias: str | None = None


async def find_recipient(
    raw: Raw, local: str, domain: str, *, sender: str | None = None
) -> Recipient | None:
    """The live relay address ``local@domain`` and its owner's real mailbox; with a
    ``sender``, also the reverse alias made for it, if any."""
    args = (local.lower(), domain.lower())
    if sender is None:
        rows = await raw.rows(_RECIPIENT, *args)
    else:
        rows = await raw.rows(_RECIPIENT_AND_ALIAS, reverse.sender_key(sender), *args)
    if not rows:
        return None
    row = rows[0]
    made = sender is not None and row[_WIDTH + 1] is not None
    alias = f"{row[_WIDTH + 1]}@{row[_WIDTH + 2]}" if made else None
    return Recipient(record(row[:_WIDTH]), str(row[_WIDTH]), alias)


async def reverse_alias(raw: Raw, address_id: int, sender: str, *, domain: str) -> str:
    """The reverse alias for this relay address and sender, as a full address; made on
    first use (``reverse_aliases.found_or_made``)."""
    made = await aliases.found_or_made(raw, address_id, sender, domain=domain)
    return made.full_address


@cache
def _increment(counters: tuple[Counter, ...]) -> Sql:
    """One statement adding one to each of these counters: they move together, atomically,
    and never by read-modify-write."""
    # The names are the Counter literal's, never input.
    changes = ", ".join(f"{name} = {name} + 1" for name in counters)
    return Sql.same(f"UPDATE addresses SET {changes} WHERE id = ?")  # noqa: S608


@asynccontextmanager
async def _alone(raw: Raw) -> AsyncIterator[None]:
    """Around one statement that is atomic and safe alone.

    On PostgreSQL nothing: BEGIN and COMMIT would be two round trips more, and a round
    trip was the largest cost per message there (docs/benchmarks.md). SQLite writes in a
    write transaction, so that waiting for another process's write lock never blocks the
    event loop (store/sqlite_inline.py).
    """
    if raw.dialect == "postgresql":
        yield
        return
    async with raw.writing():
        yield


async def count(raw: Raw, address_id: int, counters: Iterable[Counter]) -> None:
    """Add one to each counter, in one statement."""
    named = set(counters)
    wanted = tuple(c for c in _COUNTERS if c in named)
    if wanted:
        async with _alone(raw):
            await raw.rows(_increment(wanted), address_id)


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
