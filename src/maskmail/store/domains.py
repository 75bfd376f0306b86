"""The domains the database's addresses live at: the mail plane receives for all of them."""

from __future__ import annotations

from sqlalchemy import exists, func, select, union
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store.tables import addresses, reverse_aliases


async def address_domains(conn: AsyncConnection) -> frozenset[str]:
    """Every domain a relay address or a reverse alias was made at, in lower case."""
    query = union(select(addresses.c.domain), select(reverse_aliases.c.domain))
    return frozenset(str(domain).lower() for domain in (await conn.scalars(query)))


async def receives_for(conn: AsyncConnection, host: str) -> bool:
    """True when ``host`` (lower case), or a domain it is under, is one an address or a
    reverse alias lives at: mail to a mailbox there would come back to the relay."""
    labels = host.split(".")
    names = [".".join(labels[i:]) for i in range(len(labels))]
    found = await conn.scalar(
        select(
            exists().where(func.lower(addresses.c.domain).in_(names))
            | exists().where(func.lower(reverse_aliases.c.domain).in_(names))
        )
    )
    return bool(found)
