"""Writing first from a relay address: who may be a contact, and the reverse alias that
reaches them (the API's contacts route and the dashboard's contact form)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.config import Settings
from maskmail.core.addresses import normalize_mailbox
from maskmail.core.errors import InvalidAddress
from maskmail.services.relay_domains import is_relay_host, relay_domains
from maskmail.store.reverse_aliases import ReverseAlias, found_or_made


def outside_contact(email: str, domains: frozenset[str]) -> str:
    """The mailbox a contact may be: a valid address outside the relay's ``domains``."""
    try:
        mailbox = normalize_mailbox(email)
    except InvalidAddress as exc:
        raise InvalidAddress(exc.message, {"field": "email"}) from exc
    if is_relay_host(mailbox.rpartition("@")[2], domains):
        # The relay's domain or a host below it would reach a relay address or alias (or
        # nothing), not a person.
        raise InvalidAddress(
            "an address at the relay domain cannot be a contact", {"field": "email"}
        )
    return mailbox


async def checked_contact(conn: AsyncConnection, email: str, settings: Settings) -> str:
    """``email`` as a contact, checked against the relay's domains as they are now."""
    return outside_contact(email, await relay_domains(conn, settings.domain))


async def contact_alias(
    conn: AsyncConnection, address_id: int, outside: str, settings: Settings
) -> ReverseAlias:
    """The reverse alias from the address to the checked ``outside`` mailbox; the same
    one each time it is asked for."""
    return await found_or_made(conn, address_id, outside, domain=settings.domain)
