"""The subdomain page: the store functions and rules of /v3/relay/subdomains, with the
deletion of addresses asked before it happens."""

from __future__ import annotations

import html
import re

import pytest

from maskmail.core.subdomains import Subdomain
from maskmail.store import addresses, subdomains
from tests.web.conftest import Db, Person, SignIn

pytestmark = pytest.mark.anyio


async def _sub(db: Db, person: Person) -> Subdomain | None:
    found = await db.read(subdomains.list_subdomains, person.user_id)
    return found[0] if found else None


def _alert(page: str) -> str:
    """The error the page shows, not the hint that is always there."""
    found = re.search(r'<div [^>]*role="alert"[^>]*>(.*?)</div>', page, re.S)
    assert found, "no error shown"
    return html.unescape(found[1])


async def test_claim_follows_the_rules(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("sam@example.com")
    for name, why in (
        ("ab", "3 to 63 characters"),
        ("Shop", "written in lower case"),
        ("-shop", "may not start or end with"),
        ("a\x00bc", "lower-case letters, digits and"),
    ):
        answer = await ann.post("/subdomain", {"subdomain": name})
        assert answer.status_code == 422 and why in _alert(answer.text), name
    assert await _sub(db, ann) is None
    assert (await ann.post("/subdomain", {"subdomain": "sams-shop"})).status_code == 303
    page = (await ann.client.get("/subdomain")).text
    assert 'id="subdomain">sams-shop.relay.test<' in page
    second = await ann.post("/subdomain", {"subdomain": "sams-other"})
    assert second.status_code == 403 and "already has a subdomain" in second.text
    other = await sign_in("tia@example.com")
    taken = await other.post("/subdomain", {"subdomain": "sams-shop"})
    assert taken.status_code == 422 and "taken or was used before" in taken.text


async def test_switches_make_addresses_on_it(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("uma@example.com")
    off = await ann.post("/subdomain/use", {"use": "true"})
    assert off.status_code == 422 and "claim a subdomain" in off.text.lower()
    await ann.post("/subdomain", {"subdomain": "umas"})
    sub = await _sub(db, ann)
    assert sub is not None and sub.catch_all
    assert (await ann.post("/subdomain/use", {"use": "true"})).status_code == 303
    assert (await ann.post(f"/subdomain/{sub.id}", {"catch_all": "false"})).status_code == 303
    assert (await ann.post(f"/subdomain/{sub.id}", {"catch_all": "maybe"})).status_code == 422
    assert await db.read(subdomains.uses_subdomain, ann.user_id)
    now = await _sub(db, ann)
    assert now is not None and not now.catch_all
    await ann.post("/addresses")
    (made,) = await db.read(addresses.list_addresses, ann.user_id)
    assert made.full_address.endswith("@umas.relay.test")
    page = (await ann.client.get("/subdomain")).text
    assert page.count('aria-checked="true"') == 1 and page.count('aria-checked="false"') == 1


async def test_rename_asks_then_deletes_the_addresses(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("val@example.com")
    await ann.post("/subdomain", {"subdomain": "vals"})
    await ann.post("/subdomain/use", {"use": "true"})
    await ann.post("/addresses")
    await ann.post("/addresses")
    sub = await _sub(db, ann)
    assert sub is not None
    path = f"/subdomain/{sub.id}/rename"
    bad = await ann.post(path, {"subdomain": "Bad"})
    assert bad.status_code == 422
    asked = await ann.post(path, {"subdomain": "vals-new"})
    assert asked.status_code == 200 and "This deletes the 2 addresses" in asked.text
    assert len(await db.read(addresses.list_addresses, ann.user_id)) == 2
    done = await ann.post(path, {"subdomain": "vals-new", "confirmed": "yes"})
    assert done.status_code == 303
    renamed = await _sub(db, ann)
    assert renamed is not None and renamed.subdomain == "vals-new"
    assert await db.read(addresses.list_addresses, ann.user_id) == []
    # The old name is never handed out again.
    back = await ann.post(path, {"subdomain": "vals", "confirmed": "yes"})
    assert back.status_code == 422 and "used before" in back.text


async def test_delete_asks_then_deletes(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("wes@example.com")
    bob = await sign_in("xia@example.com")
    await ann.post("/subdomain", {"subdomain": "wess"})
    await ann.post("/subdomain/use", {"use": "true"})
    await ann.post("/addresses")
    sub = await _sub(db, ann)
    assert sub is not None
    for person in (bob,):
        assert (await person.client.get(f"/subdomain/{sub.id}/delete")).status_code == 404
        assert (await person.post(f"/subdomain/{sub.id}/delete")).status_code == 404
        assert (
            await person.post(f"/subdomain/{sub.id}", {"catch_all": "false"})
        ).status_code == 404
        renamed = await person.post(f"/subdomain/{sub.id}/rename", {"subdomain": "bobs"})
        assert renamed.status_code == 404
    asked = await ann.client.get(f"/subdomain/{sub.id}/delete")
    assert asked.status_code == 200 and "This deletes the 1 address\n" in asked.text
    assert await _sub(db, ann) is not None
    assert (await ann.post(f"/subdomain/{sub.id}/delete")).status_code == 303
    assert await _sub(db, ann) is None
    assert await db.read(addresses.list_addresses, ann.user_id) == []
    assert not await db.read(subdomains.uses_subdomain, ann.user_id)
