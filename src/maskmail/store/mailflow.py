"""What the mail plane reads and counts: a recipient with its owner, and verdict counters."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.records import RelayAddress
from maskmail.core.verdict import Counter
from maskmail.store import accounts
from maskmail.store.addresses import count_mail, find_address


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


async def count_all(conn: AsyncConnection, address_id: int, counters: Iterable[Counter]) -> None:
    """Add one to each counter; call inside one transaction so they move together."""
    for counter in counters:
        await count_mail(conn, address_id, counter)
