"""Custom domains: add under the limit, list, check, switch catch-all, delete; and what
the mail plane asks per message (who holds a domain, and its DKIM key). Deleting a
domain deletes the addresses on it, as SimpleLogin does; their tombstones stay."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, delete, exists, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as upsert
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import custom_domains as rules
from maskmail.core.custom_domains import CHECKS, CustomDomain
from maskmail.core.errors import AddressNotFound, DomainLimitReached, InvalidAddress
from maskmail.store import addresses as address_store
from maskmail.store.clock import now
from maskmail.store.driver import Driver
from maskmail.store.owner_lock import lock_owner
from maskmail.store.statements import Statement
from maskmail.store.tables import addresses, custom_domains, mailboxes, reverse_aliases

_CHECK_COLUMNS = tuple(custom_domains.c[f"{name}_ok"] for name in CHECKS)
_COLUMNS = (
    custom_domains.c.id,
    custom_domains.c.user_id,
    custom_domains.c.domain,
    custom_domains.c.verified,
    custom_domains.c.catch_all,
    custom_domains.c.ownership_token,
    custom_domains.c.dkim_selector,
    custom_domains.c.dkim_txt,
    *_CHECK_COLUMNS,
    custom_domains.c.created_time,
    custom_domains.c.warned_time,
)
_NOT_FOUND = "no such domain"


def _record(row: Any) -> CustomDomain:
    checks = {name: bool(row[8 + i]) for i, name in enumerate(CHECKS)}
    return CustomDomain(
        int(row[0]),
        int(row[1]),
        str(row[2]),
        bool(row[3]),
        bool(row[4]),
        str(row[5]),
        str(row[6]),
        str(row[7]),
        checks,
        int(row[13]),
        None if row[14] is None else int(row[14]),
    )


async def list_domains(conn: AsyncConnection, user_id: int) -> list[CustomDomain]:
    rows = await conn.execute(
        select(*_COLUMNS).where(custom_domains.c.user_id == user_id).order_by(custom_domains.c.id)
    )
    return [_record(row) for row in rows]


async def every_domain(conn: AsyncConnection) -> list[CustomDomain]:
    """All users' domains, for the periodic re-check."""
    rows = await conn.execute(select(*_COLUMNS).order_by(custom_domains.c.id))
    return [_record(row) for row in rows]


async def get_domain(
    conn: AsyncConnection, user_id: int, domain_id: int, *, lock: bool = False
) -> CustomDomain:
    query = select(*_COLUMNS).where(
        (custom_domains.c.id == domain_id) & (custom_domains.c.user_id == user_id)
    )
    row = (await conn.execute(query.with_for_update() if lock else query)).first()
    if row is None:
        raise AddressNotFound(_NOT_FOUND)
    return _record(row)


async def _is_relay_domain(conn: AsyncConnection, domain: str) -> bool:
    """True when addresses or reverse aliases live at ``domain`` or a parent of it, and
    that is not a custom domain: a domain the relay received for before."""
    labels = domain.split(".")
    hosts = [".".join(labels[i:]) for i in range(len(labels) - 1)]
    relay = ~exists().where(custom_domains.c.domain == addresses.c.domain)
    relay_alias = ~exists().where(custom_domains.c.domain == reverse_aliases.c.domain)
    found = await conn.scalar(
        select(
            or_(
                exists().where(addresses.c.domain.in_(hosts), relay),
                exists().where(reverse_aliases.c.domain.in_(hosts), relay_alias),
            )
        )
    )
    return bool(found)


async def add_domain(
    conn: AsyncConnection,
    user_id: int,
    name: str,
    *,
    relay_domains: frozenset[str],
    limit: int,
    token: str,
    selector: str,
    private_key: bytes,
    dkim_txt: str,
) -> CustomDomain:
    """Add the domain for the user, unverified; InvalidAddress when it is the relay's or
    anyone's already, DomainLimitReached at the limit."""
    domain = rules.check_domain(name)
    older = {domain} if await _is_relay_domain(conn, domain) else set()
    rules.refuse_relay_domain(domain, relay_domains | older)
    # The owner's row locked: concurrent adds of one user queue for the limit check.
    await lock_owner(conn, user_id)
    count = await conn.scalar(
        select(func.count()).select_from(custom_domains).where(custom_domains.c.user_id == user_id)
    )
    if int(count or 0) >= limit:
        raise DomainLimitReached(
            f"this account has reached its limit of {limit} domains; delete one to add another",
            {"limit": limit},
        )
    written = (
        await conn.execute(
            upsert(custom_domains)
            .values(
                user_id=user_id,
                domain=domain,
                ownership_token=token,
                dkim_selector=selector,
                dkim_private_key=private_key.decode("ascii"),
                dkim_txt=dkim_txt,
                created_time=now(),
            )
            .on_conflict_do_nothing()
            .returning(*_COLUMNS)
        )
    ).first()
    if written is None:
        raise InvalidAddress("this domain was already added", {"field": "domain"})
    return _record(written)


async def record_check(
    conn: AsyncConnection, domain_id: int, checks: dict[str, bool], *, warned: bool | None = None
) -> None:
    """Keep a check's results; the ownership record, once found, verifies for good.
    ``warned``: True stamps the warning, False clears it, None leaves it."""
    values: dict[str, Any] = {f"{name}_ok": checks[name] for name in CHECKS}
    values["checked_time"] = now()
    if checks["ownership"]:
        values["verified"] = True
    if warned is not None:
        values["warned_time"] = now() if warned else None
    await conn.execute(
        update(custom_domains).where(custom_domains.c.id == domain_id).values(**values)
    )


async def set_catch_all(
    conn: AsyncConnection, user_id: int, domain_id: int, catch_all: bool
) -> CustomDomain:
    await get_domain(conn, user_id, domain_id, lock=True)
    await conn.execute(
        update(custom_domains).where(custom_domains.c.id == domain_id).values(catch_all=catch_all)
    )
    return await get_domain(conn, user_id, domain_id)


async def remove(conn: AsyncConnection, user_id: int, domain_id: int) -> None:
    """Delete the domain and every address on it (their reverse aliases go with them)."""
    found = await get_domain(conn, user_id, domain_id, lock=True)
    await address_store.delete_on_domain(conn, user_id, found.domain)
    await conn.execute(delete(custom_domains).where(custom_domains.c.id == domain_id))


async def default_mailbox(conn: AsyncConnection, user_id: int) -> str | None:
    """Where the owner is told about their domain: their default mailbox."""
    found = await conn.scalar(
        select(mailboxes.c.email).where(mailboxes.c.user_id == user_id, mailboxes.c.is_default)
    )
    return None if found is None else str(found)


async def verified_domain(conn: AsyncConnection, user_id: int, domain: str) -> bool:
    """True when the user holds ``domain`` and it is verified: addresses may go there."""
    found = await conn.scalar(
        select(custom_domains.c.id).where(
            (custom_domains.c.user_id == user_id)
            & (custom_domains.c.domain == domain)
            & custom_domains.c.verified
        )
    )
    return found is not None


async def verified_names(conn: AsyncConnection, user_id: int) -> list[str]:
    return list(
        await conn.scalars(
            select(custom_domains.c.domain)
            .where((custom_domains.c.user_id == user_id) & custom_domains.c.verified)
            .order_by(custom_domains.c.id)
        )
    )


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a verified domain, whether mail there makes addresses, and its key."""

    user_id: int
    catch_all: bool
    selector: str
    private_key: bytes


_HOLDER = Statement.from_core(
    select(
        custom_domains.c.user_id,
        custom_domains.c.catch_all,
        custom_domains.c.dkim_selector,
        custom_domains.c.dkim_private_key,
    ).where((custom_domains.c.domain == bindparam("domain")) & custom_domains.c.verified),
    "domain",
)


async def holder(driver: Driver, domain: str) -> Holder | None:
    """The verified domain's owner (the mail plane asks, for a domain not the relay's)."""
    rows = await driver.rows(_HOLDER, domain.lower())
    if not rows:
        return None
    row = rows[0]
    return Holder(int(row[0]), bool(row[1]), str(row[2]), str(row[3]).encode("ascii"))
