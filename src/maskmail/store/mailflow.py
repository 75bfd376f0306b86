"""What the mail plane reads and writes per message, on the driver (store/driver.py says
why), each as one script run in one transaction: a recipient with its owner and
mailboxes (at RCPT), the same address again with the sender's reverse alias, made if
need be (just before a forward), and the route of a reply. Counting is
``addresses.count_mail``.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, exists, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import reverse
from maskmail.core.mailboxes import Destination
from maskmail.core.pgp import DeliveryKey
from maskmail.core.records import RelayAddress
from maskmail.store import reverse_aliases as aliases
from maskmail.store.addresses import ADDRESS_COLUMNS, record
from maskmail.store.clock import now
from maskmail.store.driver import Driver, as_driver
from maskmail.store.statements import Script, Statement
from maskmail.store.tables import (
    address_mailboxes,
    addresses,
    mailbox_keys,
    mailboxes,
    reverse_aliases,
    users,
)

_WIDTH = len(ADDRESS_COLUMNS)
# An address as the mail plane sees it: a disabled user's addresses read as disabled, so
# that their mail is taken and dropped, and replies through them refused, as a disabled
# address's are (docs/mail.md). Every statement here reads the address through this, over
# ``_OWNED`` (the address joined to its owner).
_LIVE_COLUMNS = tuple(
    (column & users.c.disabled.is_(False)).label("enabled") if column.name == "enabled" else column
    for column in ADDRESS_COLUMNS
)
_OWNED = addresses.join(users, users.c.id == addresses.c.user_id)


def _destination_columns(address_id: Any) -> tuple[Any, ...]:
    """A mailbox as ``_destination`` reads it; whether the address ``address_id`` (a
    column or a parameter) chose it."""
    return (
        mailboxes.c.id,
        mailboxes.c.email,
        mailboxes.c.verified,
        mailboxes.c.paused_time.is_not(None),
        mailboxes.c.is_default,
        exists().where(
            address_mailboxes.c.address_id == address_id,
            address_mailboxes.c.mailbox_id == mailboxes.c.id,
        ),
        mailbox_keys.c.public_key,
        mailbox_keys.c.fingerprint,
        mailbox_keys.c.encrypt_subject,
        mailbox_keys.c.failed_time.is_not(None),
    )


def _destination(r: Sequence[Any]) -> Destination:
    return Destination(
        int(r[0]),
        str(r[1]),
        bool(r[2]),
        bool(r[3]),
        bool(r[4]),
        bool(r[5]),
        key=None if r[6] is None else DeliveryKey(str(r[6]), str(r[7]), bool(r[8]), bool(r[9])),
    )


_WITH_KEYS = mailboxes.outerjoin(mailbox_keys, mailbox_keys.c.mailbox_id == mailboxes.c.id)
# The address in RelayAddress's field order, its owner's mailbox, then each of the
# owner's mailboxes (none: one row of NULLs): one statement.
_RECIPIENT = Statement.from_core(
    select(*_LIVE_COLUMNS, users.c.email, *_destination_columns(addresses.c.id))
    .select_from(_OWNED.outerjoin(_WITH_KEYS, mailboxes.c.user_id == users.c.id))
    .where(
        addresses.c.address == bindparam("local"),
        addresses.c.domain == bindparam("domain"),
        addresses.c.subdomain.is_not_distinct_from(bindparam("subdomain")),
    )
    .order_by(mailboxes.c.id),
    "local",
    "domain",
    "subdomain",
)


@dataclass(frozen=True, slots=True)
class Recipient:
    address: RelayAddress
    owner_mailbox: str
    # Every mailbox of the owner; which take this address's mail is
    # ``core.mailboxes.targets``.
    destinations: tuple[Destination, ...] = ()


def find_recipient(
    local: str, domain: str, *, subdomain: str | None = None
) -> Script[Recipient | None]:
    """The live relay address ``local@[subdomain.]domain``, its owner's real mailbox and
    the owner's mailboxes (run it READ)."""
    args = (local.lower(), domain.lower(), subdomain.lower() if subdomain else None)
    rows = yield _RECIPIENT, args
    if not rows:
        return None
    first = rows[0]
    boxes = tuple(_destination(row[_WIDTH + 1 :]) for row in rows if row[_WIDTH + 1] is not None)
    return Recipient(record(first[:_WIDTH]), str(first[_WIDTH]), boxes)


@dataclass(frozen=True, slots=True)
class Checked:
    """A relay address read again just before its forward."""

    # None: deleted since it was looked up.
    address: RelayAddress | None
    # The reverse alias replies to the sender go to, as an address; None without a
    # sender, for a disabled address, or when no alias could be made this round (one
    # made concurrently for the pair, or a taken alias drawn: the next round finds it).
    reverse_alias: str | None = None


_ADDRESS = Statement.from_core(
    select(*_LIVE_COLUMNS).select_from(_OWNED).where(addresses.c.id == bindparam("address_id")),
    "address_id",
)
_ADDRESS_AND_ALIAS = Statement.from_core(
    select(*_LIVE_COLUMNS, reverse_aliases.c.alias, reverse_aliases.c.domain)
    .select_from(
        _OWNED.outerjoin(
            reverse_aliases,
            (reverse_aliases.c.address_id == addresses.c.id)
            & (reverse_aliases.c.sender == bindparam("sender")),
        )
    )
    .where(addresses.c.id == bindparam("address_id")),
    "sender",
    "address_id",
    only="sqlite",
)
# PostgreSQL: the alias made (while the address is enabled) and the address read with it
# in one statement, atomic alone. The read does not see the row the insert writes (one
# snapshot), hence coalesce. Only our own constants are put into the text.
_A = ", ".join(
    "a.enabled AND NOT u.disabled" if column.name == "enabled" else f"a.{column.name}"
    for column in ADDRESS_COLUMNS
)
_ADDRESS_MAKING_ALIAS = Statement.per_dialect(
    postgresql=f"WITH m AS ({aliases.MAKE_IF_ENABLED.postgresql} RETURNING alias, domain) "  # noqa: S608
    f"SELECT {_A}, coalesce(r.alias, m.alias), coalesce(r.domain, m.domain) "
    "FROM addresses a JOIN users u ON u.id = a.user_id "
    "LEFT JOIN reverse_aliases r ON r.address_id = a.id AND r.sender = $2 "
    "LEFT JOIN m ON TRUE WHERE a.id = $1"
)


def recheck(
    dialect: str,
    address_id: int,
    sender: str | None,
    *,
    domain: str,
    token: reverse.TokenSource = secrets.token_bytes,
) -> Script[Checked]:
    """The relay address ``address_id`` again, as it is now, and the reverse alias at
    ``domain`` for ``sender`` (None: nobody to answer), made on the sender's first
    message while the address is enabled: what a forward needs from the database, in one
    statement on PostgreSQL (run it ONE_WRITE) and one write transaction on SQLite.

    Uniqueness rests on the constraints: a row made concurrently for the pair, or a taken
    alias, leaves ``reverse_alias`` None for an enabled address, and the caller runs this
    again (``aliases.MAX_ROUNDS`` times at most), as ``aliases.found_or_made`` does."""
    if sender is None:
        rows = yield _ADDRESS, (address_id,)
        return Checked(record(rows[0]) if rows else None)
    made = (address_id, reverse.sender_key(sender), reverse.generate_alias_local(token), domain)
    if dialect == "postgresql":
        rows = yield _ADDRESS_MAKING_ALIAS, (*made, now())
    else:
        yield aliases.MAKE_IF_ENABLED, (*made, now())
        rows = yield _ADDRESS_AND_ALIAS, (made[1], address_id)
    if not rows:
        return Checked(None)
    row = rows[0]
    alias = row[_WIDTH]
    return Checked(
        record(row[:_WIDTH]),
        None if alias is None else reverse.alias_address(alias, row[_WIDTH + 1]),
    )


_DESTINATIONS = Statement.from_core(
    select(*_destination_columns(bindparam("address_id")))
    .select_from(_WITH_KEYS)
    .where(mailboxes.c.user_id == bindparam("user_id"))
    .order_by(mailboxes.c.id),
    "address_id",
    "user_id",
)


async def destinations(driver: Driver, user_id: int, address_id: int) -> list[Destination]:
    """Every mailbox of the address's owner, whether the address chose it, and its
    OpenPGP key; the rule of which get mail is ``core.mailboxes.targets``."""
    return [_destination(r) for r in await driver.rows(_DESTINATIONS, address_id, user_id)]


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
    select(*_LIVE_COLUMNS, users.c.email, users.c.show_name, reverse_aliases.c.sender)
    .select_from(_OWNED.join(reverse_aliases, reverse_aliases.c.address_id == addresses.c.id))
    .where(
        reverse_aliases.c.alias == bindparam("alias"),
        reverse_aliases.c.domain == bindparam("domain"),
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
