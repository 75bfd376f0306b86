"""Relay addresses: create under the limit, read, change, pause, delete, count their mail.
Every write to the addresses table is here.

Creating, counting and unmaking (first mail) run on the driver (store/driver.py says
why); reading, changing and deleting through SQLAlchemy Core. Counting mail also keeps
each address's counts per day (daily_activity, whose statement is store/activity.py's),
which the dashboard reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from enum import Enum
from functools import lru_cache
from typing import Any, get_args

from sqlalchemy import (
    ColumnElement,
    FromClause,
    Update,
    bindparam,
    case,
    delete,
    literal_column,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import addresses as rules
from maskmail.core.errors import (
    AddressNotFound,
    AddressTaken,
    InvalidAddress,
    LimitReached,
    UserNotFound,
)
from maskmail.core.records import RelayAddress
from maskmail.core.verdict import Counter
from maskmail.store import accounts, address_counts, tombstones
from maskmail.store import bounces as bounce_store
from maskmail.store.accounts import LIVE_KEY
from maskmail.store.activity import add_to_day
from maskmail.store.clock import now, today
from maskmail.store.driver import Driver, as_driver, run_on
from maskmail.store.owner_lock import lock_owner, locking
from maskmail.store.statements import Script, Statement
from maskmail.store.tables import addresses, subdomains, users

EDITABLE = frozenset({"description", "enabled", "block_spam"})
# The columns in RelayAddress's field order, so a row converts by position (see record).
ADDRESS_COLUMNS = tuple(addresses.c[field.name] for field in fields(RelayAddress))


def full_address_of(table: FromClause) -> ColumnElement[str]:
    """core.addresses.full_address in SQL, over ``table`` (addresses, or an alias of it):
    a NULL or empty subdomain is none. A CASE, which SQLite evaluates faster than
    coalesce(nullif())."""
    c = table.c
    return c.address + "@" + case((c.subdomain != "", c.subdomain + "." + c.domain), else_=c.domain)


def full_address_sql(alias: str) -> str:
    """The same as SQL text over the table's alias ``alias``, for the statements written
    as text (store/listing.py); the same text for SQLite and PostgreSQL."""
    expression = full_address_of(addresses.alias(alias))
    return str(expression.compile(compile_kwargs={"literal_binds": True}))


FULL_ADDRESS = full_address_of(addresses)
# Each draw from 36^8 collides with an existing address with negligible probability;
# this many collisions in a row means something else is wrong.
MAX_DRAWS = 20
_COUNTERS: tuple[Counter, ...] = get_args(Counter)


def record(row: Sequence[Any]) -> RelayAddress:
    """An address from a row of ADDRESS_COLUMNS, by position: reading fourteen attributes
    by name per row was a large share of a listing's cost."""
    # SQLite's driver returns booleans as 0/1.
    return RelayAddress(
        row[0], row[1], row[2], row[3], row[4], bool(row[5]), bool(row[6]), *row[7:]
    )


_RETURNING = "RETURNING " + ", ".join(column.name for column in ADDRESS_COLUMNS)
_NEW_ROW_COLUMNS = (
    "INSERT INTO addresses (user_id, address, domain, subdomain, enabled, block_spam, "
    "description, created_time, updated_time, num_forwarded, num_blocked, num_replied, num_spam)"
)
# The owner, whether they make new addresses on their subdomain, and its name (or NULL).
_SUBDOMAIN = (
    select(subdomains.c.subdomain).where(subdomains.c.user_id == users.c.id).scalar_subquery()
)
_USER = select(users.c.id, users.c.use_relay_subdomain, _SUBDOMAIN, users.c.max_addresses).where(
    users.c.id == bindparam("user_id")
)
_OWNER = Statement.from_core(_USER, "user_id")
_LOCKED_OWNER = Statement.from_core(locking(_USER), "user_id")
_SUBDOMAIN_NAME = Statement.from_core(
    select(subdomains.c.subdomain).where(subdomains.c.user_id == bindparam("user_id")),
    "user_id",
)
_COUNT = Statement.from_core(select(address_counts.total_of(bindparam("user_id"))), "user_id")
_INSERT = Statement.portable(
    f"{_NEW_ROW_COLUMNS} VALUES (?, ?, ?, ?, TRUE, FALSE, ?, ?, NULL, 0, 0, 0, 0) "
    f"ON CONFLICT DO NOTHING {_RETURNING}"
)
# PostgreSQL only: key check, tombstone and address in one statement, atomic on its own.
# No row back means an unknown key, an owner who makes addresses on their subdomain, or
# a drawn address that was handed out before, or an owner with a limit of their own.
_LIVE_KEY_ON_DOMAIN = (
    f"SELECT k.user_id FROM ({LIVE_KEY}) k JOIN users u ON u.id = k.user_id "
    "WHERE NOT u.use_relay_subdomain AND u.max_addresses IS NULL"
)
_CREATE_FOR_KEY = Statement.per_dialect(
    postgresql=f"WITH o AS ({_LIVE_KEY_ON_DOMAIN}), "
    f"t AS ({tombstones.RESERVE_IF} EXISTS (SELECT 1 FROM o) ON CONFLICT DO NOTHING RETURNING 1) "
    f"{_NEW_ROW_COLUMNS} SELECT o.user_id, ?, ?, NULL, TRUE, FALSE, '', ?, NULL, 0, 0, 0, 0 "
    f"FROM o CROSS JOIN t ON CONFLICT DO NOTHING {_RETURNING}",
)


class Place(Enum):
    """Where a new address goes: as the owner chose (``use_relay_subdomain``), or as the
    caller asked (the addy.io create names a domain)."""

    DEFAULT = "default"
    DOMAIN = "domain"
    SUBDOMAIN = "subdomain"


def _placed(
    place: Place, uses_subdomain: bool, subdomain: str | None, on: str | None
) -> str | None:
    """The subdomain the new address goes on, or None for the domain itself."""
    if place is Place.SUBDOMAIN and (subdomain is None or on not in (None, subdomain)):
        raise InvalidAddress("this account has no such subdomain", {"field": "domain"})
    if place is Place.SUBDOMAIN or (place is Place.DEFAULT and uses_subdomain):
        return subdomain
    return None


async def create_address(
    conn: AsyncConnection | Driver,
    user_id: int,
    *,
    domain: str,
    length: int,
    limit: int = 0,
    description: str = "",
    place: Place = Place.DEFAULT,
    on: str | None = None,
    local: str | None = None,
    choose: rules.Chooser | None = None,
) -> RelayAddress:
    """A new random address for the user, never one handed out before: every door's way
    to create one. Run it in a write transaction (the caller's SQLAlchemy one, or
    ``driver.writing()``).

    With a limit, the owner's row is locked first, so that concurrent creates for one
    user queue up and the limit check and the insert see the same world (SQLite's BEGIN
    IMMEDIATE already serialises writers; FOR UPDATE does it on PostgreSQL). Without a
    limit there is nothing to check, and uniqueness rests on the constraints, so creates
    for one user need not queue. A user's own limit (``users.max_addresses``, set on the
    admin page) holds in place of ``limit``, the server's.

    ``local`` asks for that local part instead of a random one (an address made on first
    mail, with ``place=Place.SUBDOMAIN`` and the subdomain it was sent to as ``on``):
    AddressTaken when it exists or was ever handed out.
    """
    driver = await as_driver(conn)
    owner = await driver.rows(_LOCKED_OWNER if limit > 0 else _OWNER, user_id)
    if not owner:
        raise UserNotFound(f"no user with id {user_id}")
    uses_subdomain, subdomain, own_limit = bool(owner[0][1]), owner[0][2], owner[0][3]
    if own_limit is not None:
        # The user's own limit (the admin page's) in place of the setting.
        if limit <= 0 < own_limit:
            await lock_owner(driver, user_id)
        limit = int(own_limit)
    if subdomain is not None and (
        place is Place.SUBDOMAIN or (place is Place.DEFAULT and uses_subdomain)
    ):
        # Renaming or deleting the subdomain locks the owner's row first too: under that
        # lock the name is read again, so that no address is made on a name whose
        # addresses a rename has just deleted.
        if limit <= 0:
            await lock_owner(driver, user_id)
        found = await driver.rows(_SUBDOMAIN_NAME, user_id)
        subdomain = found[0][0] if found else None
    subdomain = _placed(place, uses_subdomain, subdomain, on)
    if limit > 0 and (await driver.rows(_COUNT, user_id))[0][0] >= limit:
        raise LimitReached(
            f"this account has reached its limit of {limit} addresses; "
            "delete one you no longer use to make room",
            {"limit": limit},
        )
    created = now()
    # ON CONFLICT DO NOTHING rather than a SAVEPOINT per draw: a collision is a row not
    # written, not an error to roll back, which saves two round trips per create.
    for _ in range(1 if local else MAX_DRAWS):
        drawn = local or rules.generate_local_part(length, choose)
        tombstone = rules.tombstone(rules.full_address(drawn, domain, subdomain))
        if not await tombstones.reserve(driver, tombstone, created):
            continue  # handed out before
        made = await driver.rows(_INSERT, user_id, drawn, domain, subdomain, description, created)
        if made:
            return record(made[0])
        if local:
            # The tombstone was written: roll it back with the caller's transaction.
            break
    raise AddressTaken(
        "this address exists or was used before"
        if local
        else "could not find a free address; try again"
    )


async def create_for_key(
    driver: Driver,
    key_hash: str,
    *,
    domain: str,
    length: int,
    limit: int = 0,
    choose: rules.Chooser | None = None,
) -> RelayAddress | None:
    """A new address for the key's owner (see ``create_address``); None for an unknown key.

    Without a limit on PostgreSQL this is one round trip: a statement that checks the key
    and writes tombstone and address together needs no BEGIN and COMMIT around it. It
    only serves addresses on the domain; otherwise (a subdomain, or the rare address
    handed out before) it is ``create_address`` in a write transaction.
    """
    if driver.dialect == "postgresql" and limit <= 0:
        created = now()
        local = rules.generate_local_part(length, choose)
        tombstone = rules.tombstone(rules.full_address(local, domain))
        made = await driver.rows(
            _CREATE_FOR_KEY, key_hash, tombstone, created, local, domain, created
        )
        if made:
            return record(made[0])
        # An unknown key, a subdomain, or an address handed out before: the general way.
    async with driver.writing():
        owner = await accounts.owner_for_key(driver, key_hash)
        if owner is None:
            return None
        return await create_address(
            driver, owner.user_id, domain=domain, length=length, limit=limit, choose=choose
        )


def _owned(user_id: int, address_id: int) -> Any:
    return (addresses.c.id == address_id) & (addresses.c.user_id == user_id)


async def list_addresses(conn: AsyncConnection, user_id: int) -> list[RelayAddress]:
    """All of the owner's addresses, oldest first, as records (the account export)."""
    result = await conn.execute(
        select(*ADDRESS_COLUMNS).where(addresses.c.user_id == user_id).order_by(addresses.c.id)
    )
    return [record(row) for row in result.all()]


async def get_address(conn: AsyncConnection, user_id: int, address_id: int) -> RelayAddress:
    row = (await conn.execute(select(*ADDRESS_COLUMNS).where(_owned(user_id, address_id)))).first()
    if row is None:
        raise AddressNotFound("no such address")
    return record(row)


async def update_address(
    conn: AsyncConnection, user_id: int, address_id: int, changes: Mapping[str, object]
) -> RelayAddress:
    """Change only the given editable fields; any change stamps ``updated_time``.
    Enabling an address that hard bounces paused lifts the pause."""
    unknown = set(changes) - EDITABLE
    if unknown:
        raise ValueError(f"not editable: {sorted(unknown)}")
    if not changes:
        return await get_address(conn, user_id, address_id)
    result = await conn.execute(
        update(addresses)
        .where(_owned(user_id, address_id))
        .values(**changes, updated_time=now())
        .returning(*ADDRESS_COLUMNS)
    )
    row = result.first()
    if row is None:
        raise AddressNotFound("no such address")
    if changes.get("enabled") is True:
        # The owner switched it back on: a bounce pause ends with that.
        await lift_pause(conn, address_id)
    return record(row)


async def pause(conn: AsyncConnection, address_id: int, when: int) -> None:
    """Stop forwarding: hard bounces reached the threshold (``store.address_bounces``).
    A pause is a change like any other: it stamps updated_time."""
    await conn.execute(
        update(addresses)
        .where(addresses.c.id == address_id)
        .values(enabled=False, paused_time=when, updated_time=when)
    )


async def lift_pause(conn: AsyncConnection, address_id: int) -> bool:
    """Clear a pause, and forgive the bounces that led to it, so that the next single
    bounce does not pause the address again. False when it was not paused."""
    lifted = await conn.execute(
        update(addresses)
        .where(addresses.c.id == address_id, addresses.c.paused_time.is_not(None))
        .values(paused_time=None)
        .returning(addresses.c.id)
    )
    if lifted.first() is None:
        return False
    await bounce_store.forgive_address(conn, address_id)
    return True


async def delete_address(conn: AsyncConnection, user_id: int, address_id: int) -> None:
    """Delete the address; its tombstone, written at creation, stays."""
    result = await conn.execute(delete(addresses).where(_owned(user_id, address_id)))
    if result.rowcount != 1:
        raise AddressNotFound("no such address")


async def delete_on_subdomain(conn: AsyncConnection, user_id: int, subdomain: str) -> None:
    """Delete the owner's addresses on their subdomain (renamed or deleted)."""
    await conn.execute(
        delete(addresses).where(
            (addresses.c.user_id == user_id) & (addresses.c.subdomain == subdomain)
        )
    )


async def delete_on_domain(conn: AsyncConnection, user_id: int, domain: str) -> None:
    """Delete the owner's addresses on their custom domain (deleted)."""
    await conn.execute(
        delete(addresses).where((addresses.c.user_id == user_id) & (addresses.c.domain == domain))
    )


_UNMAKE = Statement.portable("DELETE FROM addresses WHERE id = ? RETURNING id")


async def unmake(driver: Driver, address_id: int) -> bool:
    """Delete an address made on first mail whose message was not accepted
    (``store.first_mail.unmake``); False when it is gone already."""
    return bool(await driver.rows(_UNMAKE, address_id))


def _increment(counters: tuple[Counter, ...]) -> Update:
    """Adding one to each of these counters: they move together, atomically, and never
    by read-modify-write."""
    columns = [addresses.c[name] for name in counters]
    return (
        update(addresses)
        .where(addresses.c.id == bindparam("address_id"))
        .values({column: column + literal_column("1") for column in columns})
    )


@lru_cache(maxsize=16)  # one per set of counters: there are fifteen
def _counting_postgresql(counters: tuple[Counter, ...]) -> Statement:
    """The counters and the address's counts of the day (daily_activity) in one
    statement, atomic alone: no BEGIN and COMMIT, two round trips more
    (docs/benchmarks.md). Arguments: the day, then the address id."""
    moved = _increment(counters).returning(addresses.c.id).cte("moved")
    return Statement.from_core(
        add_to_day(counters, select(moved.c.id)), "day", "address_id", only="postgresql"
    )


@lru_cache(maxsize=16)
def _counting_totals(counters: tuple[Counter, ...]) -> Statement:
    """The counters alone (argument: the address id)."""
    return Statement.from_core(_increment(counters), "address_id")


@lru_cache(maxsize=16)
def _counting_day_sqlite(counters: tuple[Counter, ...]) -> Statement:
    """SQLite has no UPDATE inside WITH: the counts of the day (the day, then the address
    id), after the counters, in one write transaction."""
    address = select(addresses.c.id).where(addresses.c.id == bindparam("address_id"))
    return Statement.from_core(add_to_day(counters, address), "day", "address_id", only="sqlite")


def counted(
    dialect: str, address_id: int, counters: Iterable[Counter], day: int | None
) -> Script[None]:
    """Add one to each counter, and to the address's counts of ``day`` (clock.today() when
    the message was handled; None: none, for a late count of a day already forgotten),
    atomically: what the mail plane does per message, as one script (run it ONE_WRITE):
    one statement on PostgreSQL, two in one write transaction on SQLite."""
    named = set(counters)
    wanted = tuple(c for c in _COUNTERS if c in named)
    if not wanted:
        return
    if day is not None and dialect == "postgresql":
        yield _counting_postgresql(wanted), (day, address_id)
        return
    yield _counting_totals(wanted), (address_id,)
    if day is not None:
        yield _counting_day_sqlite(wanted), (day, address_id)


async def count_mail(driver: Driver, address_id: int, counters: Iterable[Counter]) -> None:
    """``counted`` on a driver connection the caller holds."""
    async with driver.single_write():
        await run_on(driver, counted(driver.dialect, address_id, counters, today()))
