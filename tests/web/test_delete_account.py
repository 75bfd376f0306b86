"""Deleting one's own account from the dashboard: the export first, the password, the
operator's tombstoning deletion, signed out; on both backends."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.config import Settings
from maskmail.store import addresses, users_admin
from maskmail.store.tables import tombstones
from tests.api.conftest import make_settings
from tests.web.conftest import PASSWORD, Db, SignIn

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url, signin_rate_limit="3/hour")


async def _tombstones(conn: AsyncConnection) -> int:
    return int(await conn.scalar(select(func.count()).select_from(tombstones)) or 0)


@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
async def test_export_then_delete(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("ann@example.com")
    bob = await sign_in("bob@example.com")
    made = await db.write(addresses.create_address, ann.user_id, domain="relay.test", length=8)
    assert 'href="/account/delete"' in (await ann.client.get("/password")).text
    asked = await ann.client.get("/account/delete")
    assert asked.status_code == 200 and 'href="/account/export"' in asked.text
    assert 'name="second"' not in asked.text  # no second factor yet
    exported = await ann.client.get("/account/export")
    assert exported.status_code == 200
    assert exported.headers["content-type"] == "application/json"
    assert "attachment" in exported.headers["content-disposition"]
    data = json.loads(exported.text)
    # The same data `maskmail user export` writes.
    assert data == await db.read(users_admin.export_user, "ann@example.com")
    assert [a["id"] for a in data["addresses"]] == [made.id]
    # A wrong password deletes nothing.
    wrong = await ann.post("/account/delete", {"password": "not the password"})
    assert wrong.status_code == 422 and "The password is wrong." in wrong.text
    assert len(await db.read(users_admin.list_users)) == 2
    tombs = await db.read(_tombstones)
    done = await ann.post("/account/delete", {"password": PASSWORD})
    assert done.status_code == 303 and done.headers["location"] == "/account/deleted"
    assert 'maskmail_session=""' in done.headers["set-cookie"]
    page = await ann.client.get("/account/deleted")
    assert page.status_code == 200 and "Your account is deleted" in page.text
    assert [u.email for u in await db.read(users_admin.list_users)] == ["bob@example.com"]
    # The address stays a tombstone: never handed out again.
    assert await db.read(_tombstones) == tombs
    # Ann's session is gone; Bob's is not.
    assert 'action="/sign-in"' in (await ann.client.get("/")).text
    assert "bob@example.com" in (await bob.client.get("/")).text


async def test_deleting_needs_the_form_token_and_a_session(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("ann@example.com")
    forged = await ann.client.post(
        "/account/delete", data={"password": PASSWORD}, headers={"Origin": "http://testserver"}
    )
    assert forged.status_code == 403
    cross = await ann.client.post(
        "/account/delete",
        data={"password": PASSWORD, "csrf": await ann.csrf()},
        headers={"Origin": "https://evil.example"},
    )
    assert cross.status_code == 403
    assert len(await db.read(users_admin.list_users)) == 1
    await ann.post("/sign-out")
    assert (await ann.client.get("/account/export")).status_code == 303
    assert (await ann.client.get("/account/delete")).status_code == 303


async def test_password_guesses_here_count_against_sign_in(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("ann@example.com")
    codes = [
        (await ann.post("/account/delete", {"password": f"guess {n}"})).status_code
        for n in range(4)
    ]
    assert codes == [422, 422, 422, 429]
    right = await ann.post("/account/delete", {"password": PASSWORD})
    assert right.status_code == 429 and len(await db.read(users_admin.list_users)) == 1
