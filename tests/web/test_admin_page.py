"""The admin page: who may see it, each action and its audit row, what a disabled user
loses at once, CSRF and the throttle."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import addresses as rules
from maskmail.core import keys
from maskmail.http_shared.ratelimit import Limiter
from maskmail.services import admin
from maskmail.store import accounts, audit_log
from maskmail.store import addresses as address_store
from maskmail.store.audit_log import Entry
from maskmail.store.tables import tombstones as tombstone_rows
from tests.api.conftest import client_for
from tests.web.conftest import PASSWORD, Db, Person, SignIn

pytestmark = pytest.mark.anyio
BASE = "/v3/relay/addresses"


async def _admin(sign_in: SignIn, db: Db, email: str = "root@example.com") -> Person:
    person = await sign_in(email)
    await db.write(admin.set_admin, email, True)
    return person


async def _log(db: Db) -> list[Entry]:
    return await db.read(lambda conn: audit_log.newest(conn, offset=0, limit=100))


async def _key(db: Db, user_id: int) -> dict[str, str]:
    key = await db.write(accounts.create_key, user_id)
    return {"Authorization": f"Bearer {key}"}


def _same_answer(a: object, b: object) -> None:
    import httpx

    assert isinstance(a, httpx.Response) and isinstance(b, httpx.Response)
    assert (a.status_code, a.content, a.headers.get("content-type")) == (
        b.status_code,
        b.content,
        b.headers.get("content-type"),
    )


@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
async def test_to_anyone_else_the_admin_paths_are_unknown(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("ann@example.com")
    unknown = await ann.client.get("/no-such-page")
    assert unknown.status_code == 404
    for path in ("/admin", "/admin/audit", f"/admin/users/{ann.user_id}", "/admin/users/x"):
        _same_answer(await ann.client.get(path), unknown)
    unknown_post = await ann.post("/no-such-page")
    disable = await ann.post(f"/admin/users/{ann.user_id}/disable")
    _same_answer(disable, unknown_post)
    assert not (await db.read(admin.user, ann.user_id)).disabled
    assert await _log(db) == []


async def test_signed_out_gets_the_sign_in_page(app: FastAPI) -> None:
    async with client_for(app) as anonymous:
        answer = await anonymous.get("/admin")
        assert answer.status_code == 303 and answer.headers["location"] == "/"
        assert 'action="/sign-in"' in (await anonymous.get("/")).text


async def test_an_admin_sees_users_with_counts_and_last_sign_in(sign_in: SignIn, db: Db) -> None:
    root = await _admin(sign_in, db)
    bob = await sign_in("bob@example.com")
    await bob.post("/addresses")
    await bob.post("/addresses")
    never = await db.write(accounts.add_user, "never@example.com")
    page = (await root.client.get("/admin")).text
    row = re.search(r"bob@example\.com</td>(.*?)</tr>", page, re.S)
    assert row is not None
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", row.group(1))
    assert cells[:3] == ["2", "1", "0"] and cells[3].endswith("UTC")
    never_row = re.search(r"never@example\.com</td>(.*?)</tr>", page, re.S)
    assert never_row is not None and ">never<" in never_row.group(1)
    assert f'href="/admin/users/{never}"' in page
    assert f"{await db.read(accounts.count_users)} users" in page


@pytest.mark.slow
async def test_the_users_are_paged(sign_in: SignIn, db: Db) -> None:
    root = await _admin(sign_in, db)

    async def many(conn: AsyncConnection) -> None:
        for n in range(admin.PAGE_SIZE):
            await accounts.add_user(conn, f"u{n:03}@example.com")

    await db.write(many)
    # Other modules' tests may have left users behind: the pages are read as they are.
    total = await db.read(accounts.count_users)
    pages = -(-total // admin.PAGE_SIZE)
    seen: list[str] = []
    for number in range(1, pages + 1):
        text = (await root.client.get(f"/admin?page={number}")).text
        assert f"Page {number} of {pages}" in text
        rows = re.findall(r'<td class="address">([^<]+)</td>', text)
        assert len(rows) == (admin.PAGE_SIZE if number < pages else total - len(seen))
        seen += rows
    assert len(seen) == len(set(seen)) == total
    assert {f"u{n:03}@example.com" for n in range(admin.PAGE_SIZE)} <= set(seen)
    assert 'href="/admin?page=1"' in (await root.client.get("/admin?page=2")).text
    assert "Page 1 of" in (await root.client.get("/admin?page=junk")).text


async def test_disabling_stops_keys_sessions_and_sign_in_at_once(
    sign_in: SignIn, db: Db, app: FastAPI
) -> None:
    root = await _admin(sign_in, db)
    bob = await sign_in("bob@example.com")
    auth = await _key(db, bob.user_id)
    revoked_auth = await _key(db, bob.user_id)
    await db.write(accounts.revoke_key, keys.hash_key(revoked_auth["Authorization"][7:]))
    async with client_for(app) as api:
        assert (await api.get(BASE, headers=auth)).status_code == 200
        answer = await root.post(f"/admin/users/{bob.user_id}/disable")
        assert answer.status_code == 303
        assert answer.headers["location"] == f"/admin/users/{bob.user_id}"
        refused = await api.get(BASE, headers=auth)
        _same_answer(refused, await api.get(BASE, headers=revoked_auth))
        assert refused.status_code == 401
        assert (await api.post(BASE, headers=auth)).status_code == 401
        assert (await api.get(f"{BASE}/1", headers=auth)).status_code == 401
        # The session is gone: the dashboard is the sign-in page again.
        assert (await bob.client.get("/keys")).status_code == 303
        again = await bob.client.post("/sign-in", data={"email": bob.email, "password": PASSWORD})
        assert again.status_code == 401 and "Wrong email or password." in again.text
        page = (await root.client.get(f"/admin/users/{bob.user_id}")).text
        assert "<strong>disabled</strong>" in page
        assert (await root.post(f"/admin/users/{bob.user_id}/enable")).status_code == 303
        assert (await api.get(BASE, headers=auth)).status_code == 200
    log = await _log(db)
    assert [(e.action, e.actor, e.target, e.target_id, e.actor_id) for e in log[:2]] == [
        ("enable", root.email, bob.email, bob.user_id, root.user_id),
        ("disable", root.email, bob.email, bob.user_id, root.user_id),
    ]
    assert log[0].client == "127.0.0.1" and log[2].action == "make admin"


async def test_an_admin_cannot_disable_or_delete_themselves(sign_in: SignIn, db: Db) -> None:
    root = await _admin(sign_in, db)
    page = (await root.client.get(f"/admin/users/{root.user_id}")).text
    assert "You cannot disable or delete your own account." in page
    assert "/disable" not in page and "/delete" not in page
    answer = await root.post(f"/admin/users/{root.user_id}/disable")
    assert answer.status_code == 422 and "You cannot disable your own account." in answer.text
    answer = await root.post(f"/admin/users/{root.user_id}/delete")
    assert answer.status_code == 422 and "You cannot delete your own account." in answer.text
    assert not (await db.read(admin.user, root.user_id)).disabled
    assert [e.action for e in await _log(db)] == ["make admin"]


async def test_limits_change_hold_and_are_logged(sign_in: SignIn, db: Db, app: FastAPI) -> None:
    root = await _admin(sign_in, db)
    bob = await sign_in("bob@example.com")
    auth = await _key(db, bob.user_id)
    answer = await root.post(
        f"/admin/users/{bob.user_id}/limits", {"addresses": "1", "mailboxes": "", "domains": "0"}
    )
    assert answer.status_code == 303
    async with client_for(app) as api:
        assert (await api.post(BASE, headers=auth)).status_code == 200
        assert (await api.post(BASE, headers=auth)).status_code == 403
    refused = await bob.post("/domains", {"domain": "bob.example.org"})
    assert refused.status_code == 403 and "limit of 0 domains" in refused.text
    page = (await root.client.get(f"/admin/users/{bob.user_id}")).text
    assert 'name="addresses" value="1"' in page and 'name="mailboxes" value=""' in page
    assert (await _log(db))[0].detail == "addresses 1, mailboxes default, domains 0"


@pytest.mark.parametrize(
    "form",
    [
        {"addresses": "-1"},
        {"addresses": "1e3"},
        {"mailboxes": "0"},
        {"domains": "99999999"},
        {"domains": "٣"},
    ],
)
async def test_a_bad_limit_is_refused_and_changes_nothing(
    sign_in: SignIn, db: Db, form: dict[str, str]
) -> None:
    root = await _admin(sign_in, db)
    bob = await sign_in("bob@example.com")
    answer = await root.post(f"/admin/users/{bob.user_id}/limits", form)
    assert answer.status_code == 422 and "limit is a whole number" in answer.text
    assert await db.read(accounts.limits_of, bob.user_id) == accounts.UserLimits()
    assert [e.action for e in await _log(db)] == ["make admin"]


async def test_deleting_a_user_keeps_tombstones_and_is_logged(
    sign_in: SignIn, db: Db, app: FastAPI
) -> None:
    root = await _admin(sign_in, db)
    bob = await sign_in("bob@example.com")
    await bob.post("/addresses")
    [made] = await db.read(address_store.list_addresses, bob.user_id)
    asked = await root.client.get(f"/admin/users/{bob.user_id}/delete")
    assert asked.status_code == 200 and f'action="/admin/users/{bob.user_id}/delete"' in asked.text
    answer = await root.post(f"/admin/users/{bob.user_id}/delete")
    assert answer.status_code == 303 and answer.headers["location"] == "/admin"
    assert "bob@example.com" not in (await root.client.get("/admin")).text
    gone = await root.client.get(f"/admin/users/{bob.user_id}")
    assert gone.status_code == 404 and "There is no such page." in gone.text
    kept = select(tombstone_rows.c.hash).where(
        tombstone_rows.c.hash == rules.tombstone(made.full_address)
    )
    assert await db.read(lambda conn: conn.scalar(kept)) is not None
    entry = (await _log(db))[0]
    assert (entry.action, entry.target, entry.detail) == (
        "delete",
        "bob@example.com",
        "1 addresses kept as tombstones",
    )
    # Deleted twice (another admin's tab): the 404 page, and no second row.
    assert (await root.post(f"/admin/users/{bob.user_id}/delete")).status_code == 404
    assert [e.action for e in await _log(db)].count("delete") == 1


async def test_changes_need_the_form_token_and_our_origin(sign_in: SignIn, db: Db) -> None:
    root = await _admin(sign_in, db)
    bob = await sign_in("bob@example.com")
    path = f"/admin/users/{bob.user_id}/disable"
    no_token = await root.client.post(path, headers={"Origin": "http://testserver"})
    token = await root.csrf()
    elsewhere = await root.client.post(
        path, data={"csrf": token}, headers={"Origin": "https://evil.example"}
    )
    assert no_token.status_code == 403 and elsewhere.status_code == 403
    assert not (await db.read(admin.user, bob.user_id)).disabled
    assert [e.action for e in await _log(db)] == ["make admin"]


async def test_changes_are_throttled_per_client(sign_in: SignIn, db: Db, app: FastAPI) -> None:
    root = await _admin(sign_in, db)
    bob = await sign_in("bob@example.com")
    app.state.limiter = Limiter("2/minute")
    path = f"/admin/users/{bob.user_id}/limits"
    for _ in range(2):
        assert (await root.post(path, {"addresses": "5"})).status_code == 303
    refused = await root.post(path, {"addresses": "6"})
    assert refused.status_code == 429 and "Retry-After" in refused.headers
    assert (await db.read(accounts.limits_of, bob.user_id)).addresses == 5


@pytest.mark.slow
async def test_the_audit_log_is_shown_newest_first_and_paged(sign_in: SignIn, db: Db) -> None:
    root = await _admin(sign_in, db)
    bob = await sign_in("bob@example.com")
    await db.write(accounts.add_key, bob.user_id, "k" * 64)
    for n in range(admin.PAGE_SIZE):
        await root.post(f"/admin/users/{bob.user_id}/limits", {"addresses": str(n + 1)})
    first = (await root.client.get("/admin/audit")).text
    assert first.index("addresses 50,") < first.index("addresses 49,")
    assert "addresses 1," in first and "make admin" not in first and "Page 1 of 2" in first
    second = (await root.client.get("/admin/audit?page=2")).text
    assert "make admin" in second and "addresses 1," not in second
    # Never a password, key or hash in the log.
    for entry in await _log(db):
        text = repr(entry)
        assert PASSWORD not in text and "k" * 20 not in text


async def test_invitations_are_made_listed_revoked_and_logged(sign_in: SignIn, db: Db) -> None:
    root = await _admin(sign_in, db)
    made = await root.post("/admin/invitations", {"expires": "2d"})
    assert made.status_code == 200
    found = re.search(
        r'id="new-invitation">(http://testserver/sign-up\?invite=mmi_[^<]+)<', made.text
    )
    assert found is not None
    token = found.group(1).split("invite=")[1]
    listing = (await root.client.get("/admin/invitations")).text
    assert token not in listing and ">open<" in listing
    invitation_id = re.search(r'action="/admin/invitations/(\d+)/revoke"', listing)
    assert invitation_id is not None
    revoked = await root.post(f"/admin/invitations/{invitation_id.group(1)}/revoke")
    assert revoked.status_code == 303
    assert ">revoked<" in (await root.client.get("/admin/invitations")).text
    # Again (another admin's tab): nothing changes, nothing is logged.
    assert (
        await root.post(f"/admin/invitations/{invitation_id.group(1)}/revoke")
    ).status_code == 303
    assert (await root.post("/admin/invitations/999999/revoke")).status_code == 404
    log = await _log(db)
    assert [(e.action, e.target) for e in log[:2]] == [
        ("revoke invitation", f"invitation {invitation_id.group(1)}"),
        ("invite", f"invitation {invitation_id.group(1)}"),
    ]
    assert log[1].detail.startswith("expires ") and all(token not in repr(e) for e in log)


async def test_a_bad_expiry_is_refused_and_makes_nothing(sign_in: SignIn, db: Db) -> None:
    root = await _admin(sign_in, db)
    refused = await root.post("/admin/invitations", {"expires": "forever"})
    assert refused.status_code == 422 and "Not a duration" in refused.text
    assert "No invitations yet." in refused.text
    assert [e.action for e in await _log(db)] == ["make admin"]


async def test_invitations_are_unknown_to_others(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("ann@example.com")
    unknown = await ann.client.get("/no-such-page")
    _same_answer(await ann.client.get("/admin/invitations"), unknown)
    _same_answer(await ann.post("/admin/invitations"), await ann.post("/no-such-page"))
    assert await _log(db) == []
