"""Relay subdomains: claim, rename, switch catch-all, delete; and whether new addresses
are made on them. Renaming or deleting one deletes the addresses on the old name, as
Locker does; their tombstones, and the old name's, stay. Each name taken (claimed or
renamed to) is logged by time, so that a user takes at most so many a day."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import subdomains as rules
from maskmail.core.errors import AddressNotFound, InvalidAddress, SubdomainLimitReached
from maskmail.core.subdomains import Subdomain
from maskmail.store import accounts, tombstones
from maskmail.store import addresses as address_store
from maskmail.store.clock import now
from maskmail.store.driver import Driver
from maskmail.store.owner_lock import lock_owner
from maskmail.store.statements import Statement
from maskmail.store.tables import addresses, subdomain_names, subdomains, users

_COLUMNS = (
    subdomains.c.id,
    subdomains.c.user_id,
    subdomains.c.subdomain,
    subdomains.c.catch_all,
    subdomains.c.created_time,
)
_NOT_FOUND = "no such subdomain"


def _record(row: Any) -> Subdomain:
    return Subdomain(int(row[0]), int(row[1]), str(row[2]), bool(row[3]), int(row[4]))


async def list_subdomains(conn: AsyncConnection, user_id: int) -> list[Subdomain]:
    rows = await conn.execute(
        select(*_COLUMNS).where(subdomains.c.user_id == user_id).order_by(subdomains.c.id)
    )
    return [_record(row) for row in rows]


@dataclass(frozen=True, slots=True)
class Naming:
    """What a new name is checked against: the relay's domain, its own host names (whose
    labels under the domain are kept: ``mx`` of ``mx.relay.example``), and how many names
    one user may take a day (0: no limit)."""

    domain: str
    hosts: Collection[str] = ()
    per_day: int = 0

    @property
    def own(self) -> frozenset[str]:
        return frozenset(
            label for h in self.hosts if (label := rules.own_label(h, self.domain)) is not None
        )


async def _reserve(conn: AsyncConnection, user_id: int, name: str, naming: Naming) -> None:
    """Write the name's tombstone and log it for the user, or refuse a name that breaks a
    rule, was claimed now or ever before, or one past the user's names of the day.

    Two users claiming one name meet at the tombstone's key: the second waits for the
    first's transaction and then finds the row. The caller holds the user's row, so the
    user's own changes are counted one after the other.
    """
    rules.check_subdomain(name, naming.own)
    taken = now()
    recent = await conn.scalars(
        select(subdomain_names.c.created_time)
        .where(
            (subdomain_names.c.user_id == user_id)
            & (subdomain_names.c.created_time > taken - rules.NAME_WINDOW)
        )
        .order_by(subdomain_names.c.created_time)
    )
    rules.check_name_rate([int(t) for t in recent], naming.per_day, taken)
    if not await tombstones.reserve(conn, rules.subdomain_tombstone(name, naming.domain), taken):
        raise InvalidAddress("this subdomain is taken or was used before", {"field": "subdomain"})
    await conn.execute(insert(subdomain_names).values(user_id=user_id, created_time=taken))


def _naming(domain: str | Naming) -> Naming:
    return domain if isinstance(domain, Naming) else Naming(domain)


async def claim(
    conn: AsyncConnection, user_id: int, name: str, *, domain: str | Naming
) -> Subdomain:
    """The user's one subdomain; SubdomainLimitReached if they have one already.
    ``domain``: the relay's domain, or a Naming with the rest of the rules."""
    await lock_owner(conn, user_id)
    if await list_subdomains(conn, user_id):
        raise _limit()
    await _reserve(conn, user_id, name, _naming(domain))
    try:
        row = (
            await conn.execute(
                insert(subdomains)
                .values(user_id=user_id, subdomain=name, created_time=now())
                .returning(*_COLUMNS)
            )
        ).one()
    except IntegrityError as exc:
        # The same user's concurrent claim committed first (the name's tombstone was free).
        raise _limit() from exc
    return _record(row)


def _limit() -> SubdomainLimitReached:
    return SubdomainLimitReached(
        "this account already has a subdomain; rename it or delete it first", {"limit": 1}
    )


async def _owned(conn: AsyncConnection, user_id: int, subdomain_id: int) -> Subdomain:
    """The user's subdomain, locked; the owner's row first, as creating an address on
    the subdomain locks it (``store.addresses.create_address``), so that a create waits
    for a rename under way and then sees the new name."""
    await lock_owner(conn, user_id)
    row = (
        await conn.execute(
            select(*_COLUMNS)
            .where((subdomains.c.id == subdomain_id) & (subdomains.c.user_id == user_id))
            .with_for_update()
        )
    ).first()
    if row is None:
        raise AddressNotFound(_NOT_FOUND)
    return _record(row)


async def address_count(conn: AsyncConnection, user_id: int, name: str) -> int:
    """How many addresses renaming or deleting the subdomain would delete."""
    found = await conn.scalar(
        select(func.count())
        .select_from(addresses)
        .where((addresses.c.user_id == user_id) & (addresses.c.subdomain == name))
    )
    return int(found or 0)


async def change(
    conn: AsyncConnection,
    user_id: int,
    subdomain_id: int,
    *,
    domain: str | Naming,
    name: str | None = None,
    catch_all: bool | None = None,
) -> Subdomain:
    """Rename (deleting the addresses on the old name) and/or switch catch-all."""
    found = await _owned(conn, user_id, subdomain_id)
    values: dict[str, object] = {}
    if name is not None and name != found.subdomain:
        await _reserve(conn, user_id, name, _naming(domain))
        await address_store.delete_on_subdomain(conn, user_id, found.subdomain)
        values["subdomain"] = name
    if catch_all is not None:
        values["catch_all"] = catch_all
    if not values:
        return found
    row = (
        await conn.execute(
            update(subdomains)
            .where(subdomains.c.id == subdomain_id)
            .values(**values)
            .returning(*_COLUMNS)
        )
    ).one()
    return _record(row)


async def remove(conn: AsyncConnection, user_id: int, subdomain_id: int) -> None:
    """Delete the subdomain and its addresses; new addresses go back to the domain."""
    found = await _owned(conn, user_id, subdomain_id)
    await address_store.delete_on_subdomain(conn, user_id, found.subdomain)
    await conn.execute(delete(subdomains).where(subdomains.c.id == subdomain_id))
    await accounts.set_use_relay_subdomain(conn, user_id, False)


async def uses_subdomain(conn: AsyncConnection, user_id: int) -> bool:
    found = await conn.scalar(select(users.c.use_relay_subdomain).where(users.c.id == user_id))
    return bool(found)


async def set_use_subdomain(conn: AsyncConnection, user_id: int, use: bool) -> bool:
    """Switch it; switching it on needs a subdomain to make the addresses on."""
    if use and not await list_subdomains(conn, user_id):
        raise InvalidAddress(
            "claim a subdomain before making new addresses on it", {"field": "use_relay_subdomain"}
        )
    await accounts.set_use_relay_subdomain(conn, user_id, use)
    return use


@dataclass(frozen=True, slots=True)
class CatchAll:
    """Who holds a subdomain, and whether mail there makes addresses."""

    user_id: int
    catch_all: bool


_HOLDER = Statement.from_core(
    select(subdomains.c.user_id, subdomains.c.catch_all).where(
        subdomains.c.subdomain == bindparam("name")
    ),
    "name",
)


async def holder(driver: Driver, name: str) -> CatchAll | None:
    """The subdomain's owner (the mail plane asks, per unknown recipient at one)."""
    rows = await driver.rows(_HOLDER, name.lower())
    return CatchAll(int(rows[0][0]), bool(rows[0][1])) if rows else None
