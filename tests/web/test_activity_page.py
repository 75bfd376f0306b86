"""The activity pages draw what the mail plane counted, for the account and one address."""

from __future__ import annotations

import pytest
from fastapi import FastAPI

from maskmail.store import addresses as store
from maskmail.store.driver import Checkout
from tests.web.conftest import Db, SignIn

pytestmark = pytest.mark.anyio


async def test_counts_show_on_both_charts(sign_in: SignIn, db: Db, app: FastAPI) -> None:
    ann = await sign_in("rita@example.com")
    await ann.post("/addresses")
    await ann.post("/addresses")
    first, second = await db.read(store.list_addresses, ann.user_id)
    drivers: Checkout = app.state.drivers
    async with drivers() as driver:
        await store.count_mail(driver, first.id, ["num_forwarded", "num_spam"])
        await store.count_mail(driver, second.id, ["num_forwarded"])
        await store.count_mail(driver, second.id, ["num_blocked"])
    account = (await ann.client.get("/activity")).text
    one = (await ann.client.get(f"/addresses/{first.id}")).text
    assert "Forwarded: 2" in account and "Blocked: 1" in account and "Spam: 1" in account
    assert "Forwarded: 1" in one and "Blocked: 0" in one and "Spam: 1" in one
    assert '<svg class="chart"' in account and 'role="img"' in account
    assert account.count('<rect class="forwarded"') == 1
