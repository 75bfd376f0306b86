"""The relay's domains: one set, and every door that refuses them asks it."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.config import Settings
from maskmail.core.errors import InvalidAddress
from maskmail.services import contacts, domains, mailboxes
from maskmail.services.relay_domains import relay_domains
from maskmail.store import accounts
from maskmail.store import custom_domains as custom_domain_store
from maskmail.store.addresses import create_address

pytestmark = pytest.mark.anyio

SETTINGS = Settings(domain="maskrelay.net", smtp_hostname="mx.relay-host.net")
OLD = "old-relay.example.net"


async def _owner_with_history(conn: AsyncConnection) -> int:
    """An owner with an address made before MASKMAIL_DOMAIN changed, and one on a
    custom domain of theirs."""
    user = await accounts.add_user(conn, "owner@example.com")
    await create_address(conn, user, domain=OLD, length=8)
    await custom_domain_store.add_domain(
        conn,
        user,
        "theirs.example.org",
        relay_domains=frozenset({SETTINGS.domain}),
        limit=5,
        token="t" * 32,
        selector="mm-abc123",
        private_key=b"",
        dkim_txt="v=DKIM1; k=rsa; p=",
    )
    await create_address(conn, user, domain="theirs.example.org", length=8)
    return user


async def test_the_relays_domains_are_its_own_and_older_ones_not_users(
    conn: AsyncConnection,
) -> None:
    await _owner_with_history(conn)
    # Other tests on this database may leave addresses at their own relay domains.
    found = await relay_domains(conn, "MaskRelay.net")
    assert {"maskrelay.net", OLD} <= found
    assert "theirs.example.org" not in found


@pytest.mark.parametrize("host", ["maskrelay.net", "sub.maskrelay.net", OLD, f"x.{OLD.upper()}"])
async def test_every_door_refuses_a_host_of_the_relay(conn: AsyncConnection, host: str) -> None:
    user = await _owner_with_history(conn)
    with pytest.raises(InvalidAddress, match="relay"):
        await mailboxes.add_and_ask(
            conn, SETTINGS, user, f"me@{host}", sender=None, link_for=lambda token: token
        )
    with pytest.raises(InvalidAddress, match="relay"):
        await contacts.checked_contact(conn, f"someone@{host}", SETTINGS)
    with pytest.raises(InvalidAddress, match="relay"):
        await domains.add_for(conn, user, host.lower(), SETTINGS)


async def test_a_host_that_only_ends_alike_is_not_the_relays(conn: AsyncConnection) -> None:
    await _owner_with_history(conn)
    assert await contacts.checked_contact(conn, "x@bold-relay.example.net", SETTINGS) == (
        "x@bold-relay.example.net"
    )


async def test_no_user_may_add_the_relays_mail_host(conn: AsyncConnection) -> None:
    user = await _owner_with_history(conn)
    with pytest.raises(InvalidAddress, match="belongs to the relay"):
        await domains.add_for(conn, user, "mx.relay-host.net", SETTINGS)
