"""The domains the database's addresses live at: the mail plane receives for all of them."""

from __future__ import annotations

from sqlalchemy import select, union
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store.tables import addresses, reverse_aliases


async def address_domains(conn: AsyncConnection) -> frozenset[str]:
    """Every domain a relay address or a reverse alias was made at, in lower case."""
    query = union(select(addresses.c.domain), select(reverse_aliases.c.domain))
    return frozenset(str(domain).lower() for domain in (await conn.scalars(query)))
