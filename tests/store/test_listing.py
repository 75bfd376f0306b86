"""The database's JSON for an address is the API's, and pages and chunks cover a list."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest
from sqlalchemy import text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.api.schemas import PrivateEmail, address_json
from maskmail.core import keys
from maskmail.core.errors import AddressTaken, LimitReached
from maskmail.core.records import PRIVATE_EMAIL_FIELDS, RelayAddress
from maskmail.store import accounts, listing
from maskmail.store import addresses as store
from maskmail.store.driver import driver_of, run_on
from maskmail.store.engine import create_engine
from maskmail.store.tables import addresses
from tests.core.test_addresses import pinned
from tests.support import address_ids, fresh_database

pytestmark = pytest.mark.anyio
DOMAIN = "relay.test"


async def _owner(conn: AsyncConnection, email: str, n: int) -> tuple[str, int]:
    user = await accounts.add_user(conn, email)
    key = keys.generate_key()
    await accounts.add_key(conn, user, keys.hash_key(key))
    for _ in range(n):
        await store.create_address(conn, user, domain=DOMAIN, length=8)
    return keys.hash_key(key), user


async def _records(conn: AsyncConnection, user: int) -> list[RelayAddress]:
    return [await store.get_address(conn, user, i) for i in await address_ids(conn, user)]


async def test_database_json_equals_the_api_json_for_every_kind_of_value(
    conn: AsyncConnection,
) -> None:
    key_hash, user = await _owner(conn, "json@example.com", 3)
    first, second, third = await _records(conn, user)
    await conn.execute(
        update(addresses)
        .where(addresses.c.id == first.id)
        .values(
            description='quote " backslash \\ émoji 🎭 <tag> \t\n\x01 \u2028 / end',
            enabled=False,
            block_spam=True,
            updated_time=1_700_000_000,
            num_forwarded=2**40,
            subdomain="sub",
        )
    )
    await conn.execute(update(addresses).where(addresses.c.id == second.id).values(subdomain=""))
    driver = await driver_of(conn)
    found = await run_on(driver, listing.page(key_hash, offset=0, limit=10))
    assert found is not None
    expected = [address_json(r) for r in await _records(conn, user)]
    written = orjson.loads(b"[%b]" % found.items)
    assert written == expected
    # Every declared field, in the declared order, and the API's schema documents them.
    assert [list(item) for item in written] == [list(PRIVATE_EMAIL_FIELDS)] * 3
    assert tuple(PrivateEmail.model_fields) == PRIVATE_EMAIL_FIELDS
    chunk = await run_on(driver, listing.first_chunk(key_hash, 10))
    assert chunk is not None and orjson.loads(b"[%b]" % chunk.items) == expected
    assert expected[0]["full_address"] == f"{first.address}@sub.{DOMAIN}"
    assert expected[1]["full_address"] == f"{second.address}@{DOMAIN}"
    assert [item["id"] for item in expected] == [first.id, second.id, third.id]


async def test_a_page_counts_all_and_holds_its_slice(conn: AsyncConnection) -> None:
    key_hash, user = await _owner(conn, "page@example.com", 7)
    await _owner(conn, "other@example.com", 2)
    ids = [r.id for r in await _records(conn, user)]
    driver = await driver_of(conn)
    found = await run_on(driver, listing.page(key_hash, offset=2, limit=3))
    assert found is not None and found.user_id == user and found.count == 7
    assert [a["id"] for a in orjson.loads(b"[%b]" % found.items)] == ids[2:5]
    past = await run_on(driver, listing.page(key_hash, offset=7, limit=3))
    assert past is not None and past.count == 7 and past.items == b""


async def test_chunks_cover_the_list_once_in_order(conn: AsyncConnection) -> None:
    key_hash, user = await _owner(conn, "chunks@example.com", 7)
    ids = [r.id for r in await _records(conn, user)]
    driver = await driver_of(conn)
    chunk = await run_on(driver, listing.first_chunk(key_hash, 3))
    assert chunk is not None and chunk.user_id == user
    seen = [a["id"] for a in orjson.loads(b"[%b]" % chunk.items)]
    while chunk.size == 3:
        chunk = await run_on(driver, listing.next_chunk(user, chunk.last_id, 3))
        seen += [a["id"] for a in orjson.loads(b"[%b]" % chunk.items)] if chunk.size else []
    assert seen == ids


async def test_unknown_or_revoked_keys_find_nothing(conn: AsyncConnection) -> None:
    key_hash, _ = await _owner(conn, "revoked@example.com", 1)
    driver = await driver_of(conn)
    assert (
        await run_on(driver, listing.page(keys.hash_key("mm_live_nobody"), offset=0, limit=10))
        is None
    )
    assert await accounts.revoke_key(conn, key_hash)
    assert await run_on(driver, listing.page(key_hash, offset=0, limit=10)) is None
    assert await run_on(driver, listing.first_chunk(key_hash, 10)) is None
    assert await accounts.owner_for_key(conn, key_hash) is None


async def test_an_owner_without_addresses_has_an_empty_list(conn: AsyncConnection) -> None:
    key_hash, user = await _owner(conn, "empty@example.com", 0)
    driver = await driver_of(conn)
    assert await run_on(driver, listing.page(key_hash, offset=0, limit=10)) == listing.Page(
        user, 0, b""
    )
    assert await run_on(driver, listing.first_chunk(key_hash, 10)) == listing.Chunk(user, b"", 0, 0)


async def test_create_for_key_skips_used_addresses_and_refuses_unknown_keys(
    conn: AsyncConnection,
) -> None:
    key_hash, user = await _owner(conn, "creator@example.com", 0)
    driver = await driver_of(conn)
    first = await store.create_for_key(
        driver, key_hash, domain=DOMAIN, length=6, choose=pinned("abcdef")
    )
    assert first is not None and (first.user_id, first.address) == (user, "abcdef")
    assert first.enabled is True and first.block_spam is False and first.updated_time is None
    again = await store.create_for_key(
        driver, key_hash, domain=DOMAIN, length=6, choose=pinned("abcdef", "ghijkl")
    )
    assert again is not None and again.address == "ghijkl"
    unknown = keys.hash_key("mm_live_nobody")
    assert await store.create_for_key(driver, unknown, domain=DOMAIN, length=6) is None
    always_a = lambda alphabet: "a"  # noqa: E731
    assert await store.create_for_key(driver, key_hash, domain=DOMAIN, length=6, choose=always_a)
    with pytest.raises(AddressTaken):
        await store.create_for_key(driver, key_hash, domain=DOMAIN, length=6, choose=always_a)
    made = [a.address for a in await _records(conn, user)]
    assert made == ["abcdef", "ghijkl", "aaaaaa"]


async def test_create_for_key_holds_the_limit(conn: AsyncConnection) -> None:
    key_hash, user = await _owner(conn, "limited@example.com", 2)
    driver = await driver_of(conn)
    with pytest.raises(LimitReached):
        await store.create_for_key(driver, key_hash, domain=DOMAIN, length=8, limit=2)
    made = await store.create_for_key(driver, key_hash, domain=DOMAIN, length=8, limit=3)
    assert made is not None and made.user_id == user
    assert await store.create_for_key(driver, "0" * 64, domain=DOMAIN, length=8, limit=3) is None


async def _plan_cache_mode(url: str) -> object:
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.connect() as conn:
            return await conn.scalar(text("SHOW plan_cache_mode"))
    finally:
        await engine.dispose()


def test_postgresql_connections_keep_each_statements_generic_plan(tmp_path: Path) -> None:
    with fresh_database("postgres", tmp_path) as url:
        assert asyncio.run(_plan_cache_mode(url)) == "force_generic_plan"
