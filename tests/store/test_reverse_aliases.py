"""Reverse aliases: stable per pair, unique, made once under concurrency, gone with the address."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from maskmail.core.errors import AddressTaken
from maskmail.store.addresses import delete_address
from maskmail.store.driver import DriverPool
from maskmail.store.engine import transaction
from maskmail.store.mailflow import find_reply_route
from maskmail.store.reverse_aliases import found_or_made
from tests.support import new_address

pytestmark = pytest.mark.anyio
DOMAIN = "relay.test"


async def test_same_pair_gets_the_same_alias(conn: AsyncConnection) -> None:
    _, address_id = await new_address(conn)
    first = await found_or_made(conn, address_id, "Alice@Example.com", domain=DOMAIN)
    again = await found_or_made(conn, address_id, "alice@example.COM", domain=DOMAIN)
    assert again == first
    assert first.sender == "alice@example.com"
    assert first.full_address == f"{first.alias}@{DOMAIN}"
    route = await find_reply_route(conn, first.alias.upper(), DOMAIN)
    assert route is not None and (route.address.id, route.outside) == (address_id, first.sender)


async def test_other_sender_or_address_gets_another_alias(conn: AsyncConnection) -> None:
    _, one = await new_address(conn)
    _, two = await new_address(conn)
    a = await found_or_made(conn, one, "alice@example.com", domain=DOMAIN)
    b = await found_or_made(conn, one, "bob@example.com", domain=DOMAIN)
    c = await found_or_made(conn, two, "alice@example.com", domain=DOMAIN)
    assert len({a.alias, b.alias, c.alias}) == 3


def tokens(*values: bytes) -> Iterator[bytes]:
    yield from values


async def test_a_colliding_draw_is_drawn_again(conn: AsyncConnection) -> None:
    _, address_id = await new_address(conn)
    fixed = b"\x01" * 15
    first = await found_or_made(conn, address_id, "a@example.com", domain=DOMAIN,
                                    token=lambda n: fixed)  # fmt: skip
    draws = tokens(fixed, b"\x02" * 15)
    second = await found_or_made(
        conn, address_id, "b@example.com", domain=DOMAIN, token=lambda n: next(draws)
    )
    assert second.alias != first.alias
    with pytest.raises(AddressTaken):
        await found_or_made(conn, address_id, "c@example.com", domain=DOMAIN, token=lambda n: fixed)


async def test_deleting_the_address_deletes_its_aliases(conn: AsyncConnection) -> None:
    user_id, address_id = await new_address(conn)
    alias = await found_or_made(conn, address_id, "a@example.com", domain=DOMAIN)
    await delete_address(conn, user_id, address_id)
    assert await find_reply_route(conn, alias.alias, DOMAIN) is None


async def test_concurrent_first_use_agrees_on_one_alias(engine: AsyncEngine) -> None:
    async with transaction(engine) as conn:
        _, address_id = await new_address(conn)

    async def make() -> str:
        async with transaction(engine) as conn:
            return (await found_or_made(conn, address_id, "x@example.com", domain=DOMAIN)).alias

    made = await asyncio.gather(*(make() for _ in range(4)))
    assert len(set(made)) == 1


async def test_on_a_connection_of_its_own_a_colliding_draw_is_drawn_again(
    engine: AsyncEngine,
) -> None:
    # As the mail plane makes them: autocommit on PostgreSQL, a write transaction of its
    # own on SQLite.
    async with transaction(engine) as conn:
        _, address_id = await new_address(conn)
    source = DriverPool(engine)
    fixed = b"\x03" * 15
    async with source() as driver:
        first = await found_or_made(driver, address_id, "a@example.com", domain=DOMAIN,
                                    token=lambda n: fixed)  # fmt: skip
    draws = tokens(fixed, b"\x04" * 15)
    async with source() as driver:
        second = await found_or_made(
            driver, address_id, "b@example.com", domain=DOMAIN, token=lambda n: next(draws)
        )
        again = await found_or_made(driver, address_id, "A@example.com", domain=DOMAIN)
    assert second.alias != first.alias and again == first
    with pytest.raises(AddressTaken):
        async with source() as driver:
            await found_or_made(driver, address_id, "c@example.com", domain=DOMAIN,
                                token=lambda n: fixed)  # fmt: skip
    async with transaction(engine, readonly=True) as conn:
        for made in (first, second):
            route = await find_reply_route(conn, made.alias, DOMAIN)
            assert route is not None and route.outside == made.sender
