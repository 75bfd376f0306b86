"""One user's own limits, which an admin may set (services/admin.py), else the server's
settings: read where mailboxes and custom domains are added. (The address limit is read
where addresses are made, ``store.addresses.create_address``.)"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.config import Settings
from maskmail.store import accounts


async def mailbox_limit(conn: AsyncConnection, user_id: int, settings: Settings) -> int:
    """The user's own mailbox limit, else MASKMAIL_MAX_MAILBOXES_PER_USER."""
    own = (await accounts.limits_of(conn, user_id)).mailboxes
    return settings.max_mailboxes_per_user if own is None else own


async def domain_limit(conn: AsyncConnection, user_id: int, settings: Settings) -> int:
    """The user's own domain limit, else MASKMAIL_MAX_DOMAINS_PER_USER."""
    own = (await accounts.limits_of(conn, user_id)).domains
    return settings.max_domains_per_user if own is None else own
