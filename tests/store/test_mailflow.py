"""The mail plane's store calls, on driver connections from the pool as the mail plane takes
them: one-query recipient lookup (with the sender's reverse alias), counters, reverse
aliases made in autocommit on PostgreSQL, which must still agree under concurrency."""

from __future__ import annotations

import asyncio
import secrets

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.store import accounts, mailflow
from maskmail.store.addresses import count_mail, create_address, get_address, update_address
from maskmail.store.driver import DriverPool
from maskmail.store.engine import transaction

pytestmark = pytest.mark.anyio
DOMAIN = "relay.test"


async def new_address(engine: AsyncEngine) -> tuple[int, int, str, str]:
    owner = f"Owner.{secrets.token_hex(4)}@Example.com"
    async with transaction(engine) as conn:
        user_id = await accounts.add_user(conn, owner)
        address = await create_address(conn, user_id, domain=DOMAIN, length=8)
    return user_id, address.id, address.address, owner


async def test_recipient_comes_with_its_owner_in_any_case(engine: AsyncEngine) -> None:
    user_id, address_id, local, owner = await new_address(engine)
    async with DriverPool(engine)() as driver:
        found = await mailflow.find_recipient(driver, local.upper(), DOMAIN.upper())
        missing = await mailflow.find_recipient(driver, local + "x", DOMAIN)
    assert found is not None and missing is None
    assert (found.address.id, found.address.user_id, found.owner_mailbox) == (
        address_id,
        user_id,
        owner,
    )
    assert found.address.enabled is True and found.address.block_spam is False
    assert found.reverse_alias is None


async def test_recipient_comes_with_the_senders_reverse_alias_once_made(
    engine: AsyncEngine,
) -> None:
    _, address_id, local, _ = await new_address(engine)
    source = DriverPool(engine)

    async def find(sender: str | None) -> mailflow.Recipient:
        async with source() as driver:
            found = await mailflow.find_recipient(driver, local, DOMAIN, sender=sender)
        assert found is not None and found.address.id == address_id
        return found

    assert (await find("Alice@Example.com")).reverse_alias is None
    async with source() as driver:
        made = await mailflow.reverse_alias(driver, address_id, "alice@example.com", domain=DOMAIN)
    assert (await find(" Alice@Example.COM")).reverse_alias == made
    assert (await find("bob@example.com")).reverse_alias is None
    assert (await find(None)).reverse_alias is None
    async with source() as driver:
        missing = await mailflow.find_recipient(driver, local + "x", DOMAIN, sender="a@b.c")
    assert missing is None


async def test_a_disabled_address_is_found_disabled(engine: AsyncEngine) -> None:
    user_id, address_id, local, _ = await new_address(engine)
    async with transaction(engine) as conn:
        await update_address(conn, user_id, address_id, {"enabled": False})
    async with DriverPool(engine)() as driver:
        found = await mailflow.find_recipient(driver, local, DOMAIN, sender="a@example.com")
    assert found is not None and found.address.enabled is False


async def test_counters_move_together_and_only_the_named_ones(engine: AsyncEngine) -> None:
    user_id, address_id, _, _ = await new_address(engine)
    source = DriverPool(engine)
    for named in (("num_spam", "num_forwarded"), ("num_forwarded",), ()):
        async with source() as driver:
            await count_mail(driver, address_id, named)
    async with transaction(engine, readonly=True) as conn:
        address = await get_address(conn, user_id, address_id)
    counters = (address.num_forwarded, address.num_spam, address.num_blocked, address.num_replied)
    assert counters == (2, 1, 0, 0)


async def test_concurrent_first_messages_from_one_sender_agree_on_one_alias(
    engine: AsyncEngine,
) -> None:
    _, address_id, _, _ = await new_address(engine)
    source = DriverPool(engine)

    async def first_use(sender: str) -> str:
        async with source() as driver:
            return await mailflow.reverse_alias(driver, address_id, sender, domain=DOMAIN)

    made = await asyncio.gather(*(first_use("X@example.com") for _ in range(6)))
    assert len(set(made)) == 1 and made[0].endswith(f"@{DOMAIN}")
    assert await first_use("y@example.com") != made[0]
