"""The address and mailbox limits hold when one user's creates race each other."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.core.errors import LimitReached, MailboxLimitReached
from maskmail.core.mailboxes import new_proof
from maskmail.store import accounts, mailboxes
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
