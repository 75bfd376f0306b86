"""The addresses page changes addresses exactly as the API does, and only the viewer's."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI

from maskmail.core.paging import positive_int
from maskmail.core.records import MAX_ID
from maskmail.store import addresses as store
from maskmail.store import subdomains
from maskmail.store.addresses import Place
from tests.api.conftest import client_for
from tests.web.conftest import Db, SignIn

pytestmark = pytest.mark.anyio


def _ids(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<tr id="row-(\d+)"', html)]


async def test_new_address_shows_at_the_top(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("hal@example.com")
    first = await ann.post("/addresses")
    second = await ann.post("/addresses")
    assert first.status_code == second.status_code == 303
    made = await db.read(store.list_addresses, ann.user_id)
    assert len(made) == 2
    page = await ann.client.get(second.headers["location"])
    assert f'id="new-address">{made[1].full_address}<' in page.text
    assert _ids(page.text) == [made[1].id, made[0].id]


async def test_changes_go_through_the_store_rules(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("ida@example.com")
    await ann.post("/addresses")
    (made,) = await db.read(store.list_addresses, ann.user_id)
    path = f"/addresses/{made.id}"
    assert (await ann.post(path, {"description": "shop"})).status_code == 303
    assert (await ann.post(path, {"enabled": "false"})).status_code == 303
    swapped = await ann.client.post(
        path,
        data={"csrf": await ann.csrf(), "block_spam": "true"},
        headers={"HX-Request": "true", "Origin": "http://testserver"},
    )
    assert swapped.status_code == 200 and swapped.text.lstrip().startswith("<tr")
    assert 'id="block_spam-' in swapped.text and 'aria-checked="true"' in swapped.text
    too_long = await ann.post(path, {"description": "x" * 65})
    wrong_type = await ann.post(path, {"enabled": "maybe"})
    assert too_long.status_code == wrong_type.status_code == 422
    now = await db.read(store.get_address, ann.user_id, made.id)
    assert (now.description, now.enabled, now.block_spam) == ("shop", False, True)
    assert now.updated_time is not None


async def test_search_and_pages(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("jon@example.com")
    for _ in range(52):
        await db.write(store.create_address, ann.user_id, domain="relay.test", length=8)
    made = await db.read(store.list_addresses, ann.user_id)
    await db.write(store.update_address, ann.user_id, made[3].id, {"description": "Bank 100%"})
    first = await ann.client.get("/")
    second = await ann.client.get("/?page=2")
    assert len(_ids(first.text)) == 50 and len(_ids(second.text)) == 2
    assert _ids(first.text)[0] == made[-1].id and _ids(second.text)[-1] == made[0].id
    assert "Next page" in first.text and "Previous page" in second.text
    assert _ids((await ann.client.get("/?q=bank 100%")).text) == [made[3].id]
    assert _ids((await ann.client.get("/?q=" + made[7].address)).text) == [made[7].id]
    assert _ids((await ann.client.get("/?q=_")).text) == []


async def test_fifty_long_rows_weigh_under_100_kb(sign_in: SignIn, db: Db) -> None:
    """Issue 14's budget, with full 64-character descriptions on a long subdomain."""
    ann = await sign_in("kai@example.com")
    sub = "a-rather-long-subdomain-name-for-one-shop"
    await db.write(subdomains.claim, ann.user_id, sub, domain="relay.test")
    for n in range(51):
        await db.write(
            store.create_address,
            ann.user_id,
            domain="relay.test",
            length=12,
            place=Place.SUBDOMAIN,
            description=f"{n:02d}" + "d" * 62,
        )
    page = await ann.client.get("/")
    assert len(_ids(page.text)) == 50 and "d" * 62 in page.text
    assert page.text.count(f"@{sub}.relay.test") >= 150
    assert len(page.content) < 100 * 1024, len(page.content)


async def test_delete_asks_first(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("kim@example.com")
    await ann.post("/addresses")
    (made,) = await db.read(store.list_addresses, ann.user_id)
    confirm = await ann.client.get(f"/addresses/{made.id}/delete")
    assert confirm.status_code == 200 and made.full_address in confirm.text
    assert await db.read(store.list_addresses, ann.user_id) == [made]
    assert (await ann.post(f"/addresses/{made.id}/delete")).status_code == 303
    assert await db.read(store.list_addresses, ann.user_id) == []


async def test_another_users_ids_are_404(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("lea@example.com")
    bob = await sign_in("max@example.com")
    await ann.post("/addresses")
    (made,) = await db.read(store.list_addresses, ann.user_id)
    path = f"/addresses/{made.id}"
    answers = [
        await bob.client.get(path),
        await bob.client.get(path + "/delete"),
        await bob.post(path, {"enabled": "false"}),
        await bob.post(path + "/delete"),
        await bob.post(path + "/contacts", {"email": "x@example.org"}),
        await bob.client.get("/addresses/abc"),
    ]
    assert [a.status_code for a in answers] == [404] * 6
    assert made.full_address not in (await bob.client.get("/")).text
    assert await db.read(store.get_address, ann.user_id, made.id) == made


async def test_contact_gives_the_reverse_alias(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("ned@example.com")
    await ann.post("/addresses")
    (made,) = await db.read(store.list_addresses, ann.user_id)
    path = f"/addresses/{made.id}/contacts"
    first = await ann.post(path, {"email": "Shop@Example.org"})
    again = await ann.post(path, {"email": "shop@example.org"})
    own = await ann.post(path, {"email": "x@relay.test"})
    alias = re.search(r'id="reverse-alias">([^<]+)<', first.text)
    assert first.status_code == 200 and alias is not None
    assert alias.group(1).endswith("@relay.test") and alias.group(1) in again.text
    assert own.status_code == 422 and 'role="alert"' in own.text


async def test_a_change_returns_only_to_our_own_pages(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("olaf@example.com")
    await ann.post("/addresses")
    (made,) = await db.read(store.list_addresses, ann.user_id)
    path = f"/addresses/{made.id}"
    places = []
    for back in ("/?q=x&page=2", "//evil.test/", "/\\evil.test/", "https://evil.test/"):
        answer = await ann.post(path, {"enabled": "true", "back": back})
        places.append(answer.headers["location"])
    assert places == ["/?q=x&page=2", "/", "/", "/"]


async def test_hostile_input_is_a_clear_answer(sign_in: SignIn, app: FastAPI) -> None:
    ann = await sign_in("pam@example.com")
    answers = [
        await ann.client.get("/?q=a%00b&page=99999999999999999999"),
        await ann.client.get("/?q=" + "x" * 5000 + "&page=-3"),
        await ann.client.get("/addresses/99999999999999999999999"),
        await ann.post("/addresses/1", {"description": "a\x00b"}),
    ]
    async with client_for(app) as stranger:
        answers.append(
            await stranger.post("/sign-in", data={"email": "a\x00@example.com", "password": "x"})
        )
    assert [a.status_code for a in answers] == [200, 200, 404, 422, 401]


async def test_search_finds_the_full_address_on_a_subdomain(sign_in: SignIn, db: Db) -> None:
    """The address as the owner sees and copies it, subdomain included (issue 22)."""
    ann = await sign_in("lea@example.com")
    await db.write(subdomains.claim, ann.user_id, "shopx", domain="relay.test")
    plain = await db.write(store.create_address, ann.user_id, domain="relay.test", length=8)
    on_sub = await db.write(
        store.create_address, ann.user_id, domain="relay.test", length=8, place=Place.SUBDOMAIN
    )
    assert on_sub.full_address.endswith("@shopx.relay.test")
    for query, found in (
        (on_sub.full_address, [on_sub.id]),
        (on_sub.full_address.upper(), [on_sub.id]),
        ("shopx", [on_sub.id]),
        ("@shopx.relay", [on_sub.id]),
        (plain.full_address, [plain.id]),
        ("@relay.test", [plain.id]),
    ):
        assert _ids((await ann.client.get("/", params={"q": query})).text) == found, query


@pytest.mark.parametrize("raw", ["abc", "0", "-3", "٣", " 2", "99999999999999999999"])
async def test_a_page_number_is_read_as_the_api_reads_it(sign_in: SignIn, raw: str) -> None:
    """core/paging's lenient reading: what the API would take as page 1 is page 1 here."""
    ann = await sign_in("quin@example.com")
    for _ in range(3):
        await ann.post("/addresses")
    wanted = positive_int(raw, 1)
    page = await ann.client.get("/", params={"page": raw})
    assert page.status_code == 200
    assert (len(_ids(page.text)) == 3) == (wanted == 1), wanted


@pytest.mark.parametrize("raw", [str(MAX_ID), str(MAX_ID + 1)])
async def test_an_id_past_the_apis_bound_names_nothing_on_both_doors(
    sign_in: SignIn, raw: str
) -> None:
    ann = await sign_in("rae@example.com")
    page = await ann.client.get(f"/addresses/{raw}")
    assert page.status_code == 404
    assert "There is no such page." in page.text
