"""Every door writes and finds an address's full address ``local@[sub.]domain`` as core
does: the dashboard's search, the API listing's ``full_address`` and the addy.io
compatibility's ``email`` and ``domain``."""

from __future__ import annotations

import orjson
import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.api.routes.compat_addy import alias_json
from maskmail.core import keys
from maskmail.core.addresses import full_address
from maskmail.core.records import RelayAddress
from maskmail.store import accounts, listing
from maskmail.store import addresses as store
from maskmail.store.address_search import search_addresses
from maskmail.store.driver import driver_of, run_on
from maskmail.store.tables import addresses

pytestmark = pytest.mark.anyio
DOMAIN = "relay.test"
CUSTOM = "shop.example"


async def _made(conn: AsyncConnection) -> tuple[str, int, list[RelayAddress]]:
    """One address on the domain, one on the subdomain ``shopx``, one with an empty
    subdomain (none), one on a custom domain."""
    user = await accounts.add_user(conn, "doors@example.com")
    key = keys.generate_key()
    await accounts.add_key(conn, user, keys.hash_key(key))
    made = [await store.create_address(conn, user, domain=DOMAIN, length=8) for _ in range(3)]
    made.append(await store.create_address(conn, user, domain=CUSTOM, length=8))
    for address, subdomain in ((made[1], "shopx"), (made[2], "")):
        await conn.execute(
            update(addresses).where(addresses.c.id == address.id).values(subdomain=subdomain)
        )
    return keys.hash_key(key), user, [await store.get_address(conn, user, a.id) for a in made]


async def test_every_door_writes_the_full_address_as_core_does(conn: AsyncConnection) -> None:
    key_hash, _, made = await _made(conn)
    wanted = [full_address(a.address, a.domain, a.subdomain) for a in made]
    assert wanted[1].endswith(f"@shopx.{DOMAIN}") and wanted[2].endswith(f"@{DOMAIN}")
    assert [a.full_address for a in made] == wanted
    page = await run_on(await driver_of(conn), listing.page(key_hash, offset=0, limit=10))
    assert page is not None
    assert [item["full_address"] for item in orjson.loads(b"[%b]" % page.items)] == wanted
    assert [alias_json(a)["email"] for a in made] == wanted
    assert [alias_json(a)["domain"] for a in made] == [w.partition("@")[2] for w in wanted]


@pytest.mark.parametrize("which", [0, 1, 2, 3])
async def test_the_dashboard_finds_an_address_by_its_full_address(
    conn: AsyncConnection, which: int
) -> None:
    _, user, made = await _made(conn)
    wanted = made[which].full_address
    for text in (wanted, wanted.upper(), wanted.partition("@")[2]):
        count, found = await search_addresses(conn, user, text, offset=0, limit=10)
        assert made[which] in found, text
        assert count == len(found)


async def test_the_dashboard_finds_addresses_by_their_subdomain(conn: AsyncConnection) -> None:
    _, user, made = await _made(conn)
    count, found = await search_addresses(conn, user, "shopx", offset=0, limit=10)
    assert (count, found) == (1, [made[1]])
    count, found = await search_addresses(conn, user, f"@{CUSTOM}", offset=0, limit=10)
    assert (count, found) == (1, [made[3]])
