"""The domains page (issue 16 item 8): add, the records with copy buttons, check now
against a DNS server of the test's own, catch-all and delete; each effect read back
through /v3/relay/domains."""

from __future__ import annotations

from html import escape
from typing import Any

import pytest
from fastapi import FastAPI

from maskmail.config import Settings
from maskmail.core import keys
from maskmail.core.custom_domains import CHECKS
from maskmail.store import accounts
from tests.api.conftest import client_for, make_settings
from tests.api.test_domains import dns_port, publish, zone
from tests.web.conftest import Db, Person, SignIn

pytestmark = pytest.mark.anyio

# The loopback DNS server's fixtures are tests/api's.
__all__ = ["dns_port", "zone"]

DOMAINS = "/v3/relay/domains"
Zone = dict[str, list[tuple[str, str]]]


@pytest.fixture
def settings(database_url: str, dns_port: int) -> Settings:
    return make_settings(database_url, dns_resolver=f"127.0.0.1:{dns_port}", max_domains_per_user=2)


async def _auth(db: Db, person: Person) -> dict[str, str]:
    """An API key for the person, to read what the page did as the API sees it."""
    key = keys.generate_key()
    await db.write(accounts.add_key, person.user_id, keys.hash_key(key))
    return {"Authorization": f"Bearer {key}"}


async def _api(person: Person, auth: dict[str, str]) -> list[dict[str, Any]]:
    answer = await person.client.get(DOMAINS, headers=auth)
    assert answer.status_code == 200, answer.text
    return list(answer.json())


async def test_records_copy_buttons_and_check_now(sign_in: SignIn, db: Db, zone: Zone) -> None:
    ann = await sign_in("ann@example.com")
    auth = await _auth(db, ann)
    added = await ann.post("/domains", {"domain": "Mine.Example."})
    assert added.status_code == 303
    [body] = await _api(ann, auth)
    assert body["domain"] == "mine.example" and body["verified"] is False
    shown = (await ann.client.get("/domains")).text
    assert "Not verified" in shown and "Ownership: not found" in shown
    for record in body["records"]:
        assert f'data-copy="{escape(record["value"])}"' in shown, record["check"]
        assert f'data-copy="{escape(record["name"])}"' in shown
    # Without the form's token nothing is looked up.
    publish(zone, body, "ownership")
    path = f"/domains/{body['id']}/check"
    forged = await ann.client.post(path, data={"csrf": "0" * 64})
    assert forged.status_code == 403
    assert (await _api(ann, auth))[0]["checks"] == body["checks"]
    checked = await ann.post(path)
    assert checked.status_code == 303
    [after] = await _api(ann, auth)
    assert after["verified"] is True
    assert after["checks"] == {**dict.fromkeys(CHECKS, False), "ownership": True}
    shown = (await ann.client.get("/domains")).text
    assert "Verified" in shown and "Ownership: found" in shown and "DKIM: not found" in shown
    publish(zone, body, "mx", "spf", "dkim", "dmarc")
    assert (await ann.post(path)).status_code == 303
    assert all((await _api(ann, auth))[0]["checks"].values())


@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
async def test_refusals_show_the_api_message_and_add_nothing(sign_in: SignIn, db: Db) -> None:
    bob, ann = await sign_in("bob@example.com"), await sign_in("ann@example.com")
    assert (await bob.post("/domains", {"domain": "bobs.example"})).status_code == 303
    auth = await _auth(db, ann)
    taken = await ann.post("/domains", {"domain": "bobs.example"})
    assert taken.status_code == 422 and "This domain was already added." in taken.text
    assert 'value="bobs.example"' in taken.text
    relay = await ann.post("/domains", {"domain": "shop.relay.test"})
    assert relay.status_code == 422 and "This domain belongs to the relay." in relay.text
    assert (await ann.post("/domains", {"domain": "a..example"})).status_code == 422
    assert await _api(ann, auth) == []
    for name in ("one.example", "two.example"):
        assert (await ann.post("/domains", {"domain": name})).status_code == 303
    over = await ann.post("/domains", {"domain": "three.example"})
    assert over.status_code == 403
    assert "This account has reached its limit of 2 domains" in over.text
    assert [d["domain"] for d in await _api(ann, auth)] == ["one.example", "two.example"]


async def test_catch_all_delete_and_other_users(sign_in: SignIn, db: Db) -> None:
    ann, bob = await sign_in("ann@example.com"), await sign_in("bob@example.com")
    auth = await _auth(db, ann)
    await ann.post("/domains", {"domain": "cat.example"})
    [body] = await _api(ann, auth)
    base = f"/domains/{body['id']}"
    assert body["catch_all"] is True
    assert (await ann.post(base + "/catch-all", {"catch_all": "false"})).status_code == 303
    assert (await _api(ann, auth))[0]["catch_all"] is False
    odd = await ann.post(base + "/catch-all", {"catch_all": "maybe"})
    assert odd.status_code == 422 and "Choose on or off." in odd.text
    assert (await _api(ann, auth))[0]["catch_all"] is False
    # Bob can neither see nor change Ann's domain.
    for action in ("/check", "/catch-all", "/delete"):
        answer = await bob.post(base + action, {"catch_all": "true"})
        assert answer.status_code == 404, action
    assert (await bob.client.get(base + "/delete")).status_code == 404
    assert "cat.example" not in (await bob.client.get("/domains")).text
    asked = await ann.client.get(base + "/delete")
    assert asked.status_code == 200 and "Every address on it is deleted" in asked.text
    assert len(await _api(ann, auth)) == 1
    assert (await ann.post(base + "/delete")).status_code == 303
    assert await _api(ann, auth) == []


async def test_signed_out_is_sent_to_sign_in(app: FastAPI) -> None:
    async with client_for(app) as anyone:
        shown = await anyone.get("/domains")
        origin = {"Origin": "http://testserver"}
        posted = await anyone.post("/domains", data={"domain": "x.example"}, headers=origin)
    assert shown.status_code == 303 and shown.headers["location"] == "/"
    assert posted.status_code == 303 and posted.headers["location"] == "/"
