"""What the mail plane looks up per message, on the driver (store/driver.py says why): a
recipient with its owner (and the reverse alias already made for the sender at hand),
and the route of a reply. Counting is ``addresses.count_mail``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import bindparam, exists, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import reverse
from maskmail.core.mailboxes import Destination
from maskmail.core.pgp import DeliveryKey
from maskmail.core.records import RelayAddress
from maskmail.store import reverse_aliases as aliases
from maskmail.store.addresses import ADDRESS_COLUMNS, record
from maskmail.store.driver import Driver, Statement, as_driver
from maskmail.store.tables import (
    address_mailboxes,
    addresses,
    mailbox_keys,
    mailboxes,
    reverse_aliases,
    users,
)

# The address in RelayAddress's field order, then its owner's mailbox: one round trip.
# A disabled user's addresses are not found: their mail is refused as unknown.
_OWNED = addresses.join(users, users.c.id == addresses.c.user_id)
_OF = (
    addresses.c.address == bindparam("local"),
    addresses.c.domain == bindparam("domain"),
    addresses.c.subdomain.is_not_distinct_from(bindparam("subdomain")),
    users.c.disabled.is_(False),
)
_RECIPIENT = Statement.from_core(
    select(*ADDRESS_COLUMNS, users.c.email).select_from(_OWNED).where(*_OF),
    "local",
    "domain",
    "subdomain",
)
# The same, and the reverse alias of one sender if it was made already: at DATA the
# message's sender is known, and nearly every forward needs its alias.
_RECIPIENT_AND_ALIAS = Statement.from_core(
    select(*ADDRESS_COLUMNS, users.c.email, reverse_aliases.c.alias, reverse_aliases.c.domain)
    .select_from(
        _OWNED.outerjoin(
            reverse_aliases,
            (reverse_aliases.c.address_id == addresses.c.id)
            & (reverse_aliases.c.sender == bindparam("sender")),
        )
    )
    .where(*_OF),
    "sender",
    "local",
    "domain",
    "subdomain",
)
_WIDTH = len(ADDRESS_COLUMNS)


@dataclass(frozen=True, slots=True)
class Recipient:
    address: RelayAddress
    owner_mailbox: str
    # The reverse alias for the sender asked about, when it exists already.
    reverse_alias: str | None = None


async def find_recipient(
    driver: Driver,
    local: str,
    domain: str,
    *,
    subdomain: str | None = None,
    sender: str | None = None,
) -> Recipient | None:
    """The live relay address ``local@[subdomain.]domain`` and its owner's real mailbox;
    with a ``sender``, also the reverse alias made for it, if any."""
    args = (local.lower(), domain.lower(), subdomain.lower() if subdomain else None)
    if sender is None:
        rows = await driver.rows(_RECIPIENT, *args)
    else:
        rows = await driver.rows(_RECIPIENT_AND_ALIAS, reverse.sender_key(sender), *args)
    if not rows:
        return None
    row = rows[0]
    made = sender is not None and row[_WIDTH + 1] is not None
    alias = f"{row[_WIDTH + 1]}@{row[_WIDTH + 2]}" if made else None
    return Recipient(record(row[:_WIDTH]), str(row[_WIDTH]), alias)


async def reverse_alias(driver: Driver, address_id: int, sender: str, *, domain: str) -> str:
    """The reverse alias for this relay address and sender, as a full address; made on
    first use (``reverse_aliases.found_or_made``)."""
    made = await aliases.found_or_made(driver, address_id, sender, domain=domain)
    return made.full_address


_DESTINATIONS = Statement.from_core(
    select(
        mailboxes.c.id,
        mailboxes.c.email,
        mailboxes.c.verified,
        mailboxes.c.paused_time.is_not(None),
        mailboxes.c.is_default,
        exists().where(
            address_mailboxes.c.address_id == bindparam("address_id"),
            address_mailboxes.c.mailbox_id == mailboxes.c.id,
        ),
        mailbox_keys.c.public_key,
        mailbox_keys.c.fingerprint,
        mailbox_keys.c.encrypt_subject,
        mailbox_keys.c.failed_time.is_not(None),
    )
    .select_from(mailboxes.outerjoin(mailbox_keys, mailbox_keys.c.mailbox_id == mailboxes.c.id))
    .where(mailboxes.c.user_id == bindparam("user_id"))
    .order_by(mailboxes.c.id),
    "address_id",
    "user_id",
)


async def destinations(driver: Driver, user_id: int, address_id: int) -> list[Destination]:
    """Every mailbox of the address's owner, whether the address chose it, and its
    OpenPGP key; the rule of which get mail is ``core.mailboxes.targets``."""
    rows = await driver.rows(_DESTINATIONS, address_id, user_id)
    return [
        Destination(
            int(r[0]),
            str(r[1]),
            bool(r[2]),
            bool(r[3]),
            bool(r[4]),
            bool(r[5]),
            key=None if r[6] is None else DeliveryKey(str(r[6]), str(r[7]), bool(r[8]), bool(r[9])),
        )
        for r in rows
    ]


@dataclass(frozen=True, slots=True)
class ReplyRoute:
    """Where a message to a reverse alias goes, and who may send it."""

    address: RelayAddress
    owner_mailbox: str
    # The owner chose to send their display name with replies.
    show_name: bool
    # The outside sender the reverse alias stands for.
    outside: str


_REPLY_ROUTE = Statement.from_core(
    select(*ADDRESS_COLUMNS, users.c.email, users.c.show_name, reverse_aliases.c.sender)
    .select_from(
        reverse_aliases.join(addresses, addresses.c.id == reverse_aliases.c.address_id).join(
            users, users.c.id == addresses.c.user_id
        )
    )
    .where(
        reverse_aliases.c.alias == bindparam("alias"),
        reverse_aliases.c.domain == bindparam("domain"),
        users.c.disabled.is_(False),
    ),
    "alias",
    "domain",
)


async def find_reply_route(
    conn: AsyncConnection | Driver, alias: str, domain: str
) -> ReplyRoute | None:
    """The relay address, owner and outside sender behind the reverse alias ``alias@domain``."""
    rows = await (await as_driver(conn)).rows(_REPLY_ROUTE, alias.lower(), domain.lower())
    if not rows:
        return None
    row = rows[0]
    return ReplyRoute(
        address=record(row[:_WIDTH]),
        owner_mailbox=str(row[_WIDTH]),
        show_name=bool(row[_WIDTH + 1]),
        outside=str(row[_WIDTH + 2]),
    )
