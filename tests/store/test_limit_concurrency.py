"""The address and mailbox limits hold when one user's creates race each other."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.core.errors import InvalidAddress, LimitReached, MailboxLimitReached
from maskmail.core.mailboxes import new_proof
from maskmail.store import accounts, mailboxes, subdomains
from maskmail.store import addresses as store
from maskmail.store.engine import transaction
from tests.support import address_ids

pytestmark = pytest.mark.anyio
DOMAIN = "relay.test"


async def test_racing_creates_stop_at_the_limit(engine: AsyncEngine) -> None:
    async with transaction(engine) as conn:
        user = await accounts.add_user(conn, f"race-{id(engine)}@example.com")

    async def create() -> bool:
        try:
            async with transaction(engine) as conn:
                await store.create_address(conn, user, domain=DOMAIN, length=8, limit=3)
        except LimitReached:
            return False
        return True

    made = await asyncio.gather(*(create() for _ in range(12)))
    assert sum(made) == 3
    async with transaction(engine, readonly=True) as conn:
        assert len(await address_ids(conn, user)) == 3


async def test_racing_mailbox_adds_stop_at_the_limit(engine: AsyncEngine) -> None:
    async with transaction(engine) as conn:
        user = await accounts.add_user(conn, f"box-race-{id(engine)}@example.com")

    async def add(n: int) -> bool:
        try:
            async with transaction(engine) as conn:
                await mailboxes.add_mailbox(conn, user, f"m{n}@example.net", new_proof(), limit=4)
        except MailboxLimitReached:
            return False
        return True

    made = await asyncio.gather(*(add(n) for n in range(12)))
    assert sum(made) == 3
    async with transaction(engine, readonly=True) as conn:
        assert len(await mailboxes.list_mailboxes(conn, user)) == 4


@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
async def test_a_delete_racing_a_new_default_leaves_one_default(engine: AsyncEngine) -> None:
    """The delete waits for the PATCH that makes its mailbox the default, then refuses;
    without the owner's lock it deleted the new default and left none."""
    async with transaction(engine) as conn:
        user = await accounts.add_user(conn, f"default-race-{id(engine)}@example.com")
        proof = new_proof()
        two = await mailboxes.add_mailbox(conn, user, "two@example.net", proof, limit=4)
        await mailboxes.verify_by_token(conn, proof.token_hash)

    async def delete_two() -> None:
        async with transaction(engine) as conn:
            await mailboxes.delete_mailbox(conn, user, two.id)

    async with transaction(engine) as conn:
        await mailboxes.set_default(conn, user, two.id)
        deleting = asyncio.create_task(delete_two())
        # Long enough for the delete to reach the lock and wait there.
        await asyncio.sleep(0.5)
        assert not deleting.done()
    with pytest.raises(InvalidAddress):
        await deleting
    async with transaction(engine, readonly=True) as conn:
        boxes = await mailboxes.list_mailboxes(conn, user)
    assert [(m.id, m.default) for m in boxes if m.default] == [(two.id, True)]
    assert len(boxes) == 2


@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
async def test_an_address_made_during_a_rename_goes_on_the_new_name(engine: AsyncEngine) -> None:
    """A create waits for a rename under way, then makes its address on the new name (or
    none, when it asked for the old one): no address outlives the name it was on."""
    async with transaction(engine) as conn:
        user = await accounts.add_user(conn, f"rename-race-{id(engine)}@example.com")
        old = f"old-{id(engine)}"
        made = await subdomains.claim(conn, user, old, domain=DOMAIN)
        await subdomains.set_use_subdomain(conn, user, True)

    async def create(place: store.Place, limit: int = 0) -> str | None:
        try:
            async with transaction(engine) as conn:
                address = await store.create_address(
                    conn, user, domain=DOMAIN, length=8, place=place, on=old, limit=limit
                )
        except InvalidAddress:
            return None
        return address.subdomain

    async with transaction(engine) as conn:
        await subdomains.change(conn, user, made.id, domain=DOMAIN, name=f"new-{id(engine)}")
        racing = [
            asyncio.create_task(create(store.Place.DEFAULT)),
            asyncio.create_task(create(store.Place.SUBDOMAIN)),
            # With a limit the owner's row is locked first: the same order as the rename's.
            asyncio.create_task(create(store.Place.DEFAULT, limit=100)),
        ]
        await asyncio.sleep(0.5)
    new = f"new-{id(engine)}"
    assert await asyncio.gather(*racing) == [new, None, new]
    async with transaction(engine, readonly=True) as conn:
        listed = await store.list_addresses(conn, user)
    assert [a.subdomain for a in listed] == [new, new]
