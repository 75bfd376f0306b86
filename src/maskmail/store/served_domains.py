"""The domains the database's addresses live at: the mail plane receives for all of them."""

from __future__ import annotations

from sqlalchemy import select, union
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store.tables import addresses, custom_domains, reverse_aliases


async def address_domains(conn: AsyncConnection) -> frozenset[str]:
    """Every domain a relay address or a reverse alias was made at, in lower case; users'
    own domains (custom_domains) are not the relay's, and are asked about per message."""
    query = union(select(addresses.c.domain), select(reverse_aliases.c.domain))
    theirs = {str(d).lower() for d in await conn.scalars(select(custom_domains.c.domain))}
    return frozenset(str(d).lower() for d in await conn.scalars(query)) - theirs
