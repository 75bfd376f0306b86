"""Which domains belong to the relay: the one definition every door asks.

``MASKMAIL_DOMAIN``, where new addresses go, and every domain an address or a reverse
alias was made at before it changed (users' custom domains excepted: those are theirs,
and asked about per message). The mail plane receives for all of them; a host at or
below one of them is the relay's, so no mailbox may be there (mail to it would come
back to the relay), no contact (it would reach an address, not a person), and no user
may add it as a custom domain.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.custom_domains import is_within
from maskmail.store.served_domains import address_domains


async def relay_domains(conn: AsyncConnection, domain: str) -> frozenset[str]:
    """The relay's domains, in lower case: ``domain`` (``MASKMAIL_DOMAIN``) and the
    older ones."""
    return await address_domains(conn) | {domain.lower()}


def is_relay_host(host: str, domains: Iterable[str]) -> bool:
    """True when ``host`` (lower case) is one of ``domains`` or below one of them."""
    return is_within(host, domains)
