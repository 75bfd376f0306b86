"""Addresses made on first mail: what the mail plane asks before one is made (at RCPT),
the address made under the owner's limits (once its message is in), and the address
unmade when that message was not accepted after all.

The owner's counts are rows of ``first_mail_addresses``, so that the rate and the cap hold
across every mail-plane process sharing the database.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import addresses as rules
from maskmail.core.errors import AddressTaken
from maskmail.core.first_mail import WINDOW_SECONDS, OwnerLimits, OwnerMade, check_owner
from maskmail.core.records import RelayAddress
from maskmail.store import addresses as address_store
from maskmail.store import tombstones
from maskmail.store.address_counts import total_sql
from maskmail.store.addresses import Place, create_address
from maskmail.store.driver import Driver, as_driver
from maskmail.store.owner_lock import lock_owner
from maskmail.store.statements import Statement

# What RCPT asks, in one round trip: the owner's mailbox (a forward to the relay itself
# would loop), their number of addresses, their addresses made on first mail in the hour
# and kept, and whether the address (?5, its tombstone) was ever handed out. ?1 is the
# owner, ?2 the start of the hour. Each first-mail count stops at its limit (?3, ?4),
# which is all the rule needs: asking costs the same however many the owner has. A
# disabled owner is no owner: nothing is made for them.
_FACTS = Statement.portable(
    f"SELECT u.email, {total_sql('u.id')}, "
    "(SELECT count(*) FROM (SELECT 1 FROM first_mail_addresses "
    "WHERE user_id = ?1 AND created_time > ?2 LIMIT ?3) h), "
    "(SELECT count(*) FROM (SELECT 1 FROM first_mail_addresses WHERE user_id = ?1 LIMIT ?4) k), "
    "EXISTS (SELECT 1 FROM tombstones t WHERE t.hash = ?5) FROM users u "
    "WHERE u.id = ?1 AND NOT u.disabled"
)
_MARK = Statement.portable(
    "INSERT INTO first_mail_addresses (address_id, user_id, created_time) VALUES (?, ?, ?)"
)


@dataclass(frozen=True, slots=True)
class Facts:
    """What decides, at RCPT, whether an address would be made for the owner."""

    owner_mailbox: str
    addresses: int
    made: OwnerMade
    used_before: bool


def _bounds(user_id: int, limits: OwnerLimits, now: int) -> tuple[int, int, int, int]:
    # A limit of 0 (none) still counts one row: the bound must be positive.
    return user_id, now - WINDOW_SECONDS, max(limits.per_hour, 1), max(limits.kept, 1)


async def facts(
    conn: AsyncConnection | Driver,
    user_id: int,
    full_address: str,
    limits: OwnerLimits,
    now: int,
) -> Facts | None:
    """The facts for a new ``full_address`` of the owner; None for an unknown owner."""
    driver = await as_driver(conn)
    tombstone = rules.tombstone(full_address)
    rows = await driver.rows(_FACTS, *_bounds(user_id, limits, now), tombstone)
    if not rows:
        return None
    row = rows[0]
    return Facts(str(row[0]), int(row[1]), OwnerMade(int(row[2]), int(row[3])), bool(row[4]))


async def owner_made(
    conn: AsyncConnection | Driver, user_id: int, limits: OwnerLimits, now: int
) -> OwnerMade:
    """The owner's addresses made on first mail, each count up to its limit (the
    dashboard says why catch-all is paused)."""
    found = await facts(conn, user_id, "", limits, now)
    return found.made if found is not None else OwnerMade(0, 0)


async def make(
    driver: Driver,
    user_id: int,
    *,
    domain: str,
    local: str,
    place: Place,
    on: str | None,
    description: str,
    address_limit: int,
    limits: OwnerLimits,
    now: int,
) -> RelayAddress:
    """The address ``local`` made for the owner, marked as made on first mail, in one write
    transaction that holds the owner's row, so that concurrent makers (in any process)
    count one after the other: CatchAllPaused past the owner's limits, else as
    ``create_address`` (AddressTaken, LimitReached, InvalidAddress)."""
    async with driver.writing():
        await lock_owner(driver, user_id)
        found = await facts(driver, user_id, rules.full_address(local, domain, on), limits, now)
        if found is not None and found.used_before:
            # Made meanwhile by a concurrent message (or ever before): not a new address,
            # so the limits do not apply; the caller looks it up again.
            raise AddressTaken("this address exists or was used before")
        check_owner(found.made if found else OwnerMade(0, 0), limits)
        made = await create_address(
            driver,
            user_id,
            domain=domain,
            length=len(local),
            limit=address_limit,
            description=description,
            place=place,
            on=on,
            local=local,
        )
        await driver.rows(_MARK, made.id, user_id, made.created_time)
    return made


async def unmake(driver: Driver, made: RelayAddress) -> bool:
    """Delete an address made on first mail whose message was not accepted, and its
    tombstone, so that the sender's retry may make it again; False (nothing done) when
    it is gone already, for its owner may have deleted it meanwhile, and then its
    tombstone stays."""
    async with driver.writing():
        if not await address_store.unmake(driver, made.id):
            return False
        await tombstones.forget(driver, rules.tombstone(made.full_address))
    return True
