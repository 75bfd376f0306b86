"""What the mail plane reads and counts: a recipient with its owner, and verdict counters."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.records import RelayAddress
from maskmail.core.verdict import Counter
from maskmail.store import accounts
from maskmail.store.addresses import ADDRESS_COLUMNS, count_mail, find_address, to_record
from maskmail.store.tables import addresses, reverse_aliases, users


@dataclass(frozen=True, slots=True)
class Recipient:
    address: RelayAddress
    owner_mailbox: str


async def find_recipient(conn: AsyncConnection, local: str, domain: str) -> Recipient | None:
    """The live relay address ``local@domain`` and its owner's real mailbox."""
    address = await find_address(conn, local, domain)
    if address is None:
        return None
    return Recipient(address, await accounts.user_email(conn, address.user_id))


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
    """Add one to each counter; call inside one transaction so they move together."""
    for counter in counters:
        await count_mail(conn, address_id, counter)
