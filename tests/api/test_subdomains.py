"""/v3/relay/subdomains (issue 15 items 7, 8, 9): claim, rename, delete, use_subdomain."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store.tables import addresses, reverse_aliases, subdomains
from tests.api.conftest import BASE, DOMAIN, Caller, ClientFactory

pytestmark = pytest.mark.anyio

SUBS = "/v3/relay/subdomains"
USE = f"{SUBS}/use_subdomain"


async def _claim(client: httpx.AsyncClient, who: Caller, name: str) -> httpx.Response:
    return await client.post(SUBS, json={"subdomain": name}, headers=who.headers)


async def test_claim_list_and_the_one_per_user_limit(
    client: httpx.AsyncClient, alice: Caller
) -> None:
    assert (await client.get(SUBS, headers=alice.headers)).json() == []
    made = await _claim(client, alice, "alice-shop")
    assert made.status_code == 200
    body = made.json()
    assert set(body) == {"id", "subdomain", "catch_all", "created_time"}
    assert body["subdomain"] == "alice-shop" and body["catch_all"] is True
    assert (await client.get(SUBS, headers=alice.headers)).json() == [body]
    second = await _claim(client, alice, "alice-two")
    assert second.status_code == 403
    assert second.json()["code"] == "subdomain_limit_reached"
    assert (await client.get(SUBS, headers=alice.headers)).json() == [body]


async def test_bad_names_are_422_and_change_nothing(
    client: httpx.AsyncClient, alice: Caller, conn: AsyncConnection
) -> None:
    for bad in ("ab", "-abc", "abc-", "Shop", "a.b", "webmaster", "x" * 64):
        answer = await _claim(client, alice, bad)
        assert answer.status_code == 422, bad
        assert answer.json()["details"]["field"] == "subdomain"
    for body in ({}, {"subdomain": 5}, {"subdomain": "okay", "extra": 1}, {"subdomain": None}):
        assert (await client.post(SUBS, json=body, headers=alice.headers)).status_code == 422
    assert await conn.scalar(select(func.count()).select_from(subdomains)) == 0


async def test_names_are_unique_across_users_and_never_reissued(
    client: httpx.AsyncClient, alice: Caller, bob: Caller
) -> None:
    made = (await _claim(client, alice, "taken")).json()
    assert (await _claim(client, bob, "taken")).status_code == 422
    assert (await client.delete(f"{SUBS}/{made['id']}", headers=alice.headers)).status_code == 204
    assert (await _claim(client, bob, "taken")).status_code == 422
    assert (await _claim(client, alice, "taken")).status_code == 422
    # A rename leaves the old name behind for good too.
    other = (await _claim(client, alice, "first-name")).json()
    renamed = await client.put(
        f"{SUBS}/{other['id']}", json={"subdomain": "second-name"}, headers=alice.headers
    )
    assert renamed.status_code == 200 and renamed.json()["subdomain"] == "second-name"
    assert (await _claim(client, bob, "first-name")).status_code == 422


async def test_two_users_racing_for_one_name_one_wins(
    client: httpx.AsyncClient, alice: Caller, bob: Caller
) -> None:
    answers = await asyncio.gather(*(_claim(client, who, "contested") for who in (alice, bob)))
    assert sorted(a.status_code for a in answers) == [200, 422]
    owners = [len((await client.get(SUBS, headers=who.headers)).json()) for who in (alice, bob)]
    assert sorted(owners) == [0, 1]


async def test_one_user_racing_two_claims_gets_one(
    client: httpx.AsyncClient, alice: Caller
) -> None:
    answers = await asyncio.gather(*(_claim(client, alice, n) for n in ("race-one", "race-two")))
    assert sorted(a.status_code for a in answers) == [200, 403]
    assert len((await client.get(SUBS, headers=alice.headers)).json()) == 1


@pytest.mark.slow
async def test_other_users_subdomain_is_not_found(
    client: httpx.AsyncClient, alice: Caller, bob: Caller
) -> None:
    made = (await _claim(client, alice, "alices")).json()
    path = f"{SUBS}/{made['id']}"
    assert (
        await client.put(path, json={"catch_all": False}, headers=bob.headers)
    ).status_code == 404
    assert (await client.delete(path, headers=bob.headers)).status_code == 404
    assert (await client.delete(f"{SUBS}/999999", headers=alice.headers)).status_code == 404
    assert (await client.get(SUBS, headers=alice.headers)).json() == [made]


async def test_catch_all_switch_keeps_the_name(client: httpx.AsyncClient, alice: Caller) -> None:
    made = (await _claim(client, alice, "switchy")).json()
    path = f"{SUBS}/{made['id']}"
    off = await client.put(path, json={"catch_all": False}, headers=alice.headers)
    assert off.json() == {**made, "catch_all": False}
    same = await client.put(path, json={"subdomain": "switchy"}, headers=alice.headers)
    assert same.json() == {**made, "catch_all": False}
    assert (
        await client.put(path, json={"catch_all": "no"}, headers=alice.headers)
    ).status_code == 422


async def test_use_subdomain_makes_new_addresses_on_it(
    client: httpx.AsyncClient, alice: Caller, bob: Caller
) -> None:
    assert (await client.get(USE, headers=alice.headers)).json() == {"use_relay_subdomain": False}
    refused = await client.put(USE, json={"use_relay_subdomain": True}, headers=alice.headers)
    assert refused.status_code == 422
    await _claim(client, alice, "alice-sub")
    on = await client.put(USE, json={"use_relay_subdomain": True}, headers=alice.headers)
    assert on.json() == {"use_relay_subdomain": True}
    assert (await client.get(USE, headers=alice.headers)).json() == {"use_relay_subdomain": True}
    made = (await client.post(BASE, headers=alice.headers)).json()
    assert made["subdomain"] == "alice-sub" and made["domain"] == DOMAIN
    assert made["full_address"] == f"{made['address']}@alice-sub.{DOMAIN}"
    listed = (await client.get(BASE, headers=alice.headers)).json()
    assert listed == [made]
    paged = (await client.get(f"{BASE}?paging=1", headers=alice.headers)).json()
    assert paged["results"] == [made]
    # Bob's addresses stay on the domain.
    plain = (await client.post(BASE, headers=bob.headers)).json()
    assert plain["subdomain"] is None and plain["full_address"].endswith(f"@{DOMAIN}")
    await client.put(USE, json={"use_relay_subdomain": False}, headers=alice.headers)
    back = (await client.post(BASE, headers=alice.headers)).json()
    assert back["subdomain"] is None


async def test_rename_and_delete_delete_the_addresses_on_the_old_name(
    client: httpx.AsyncClient, alice: Caller, conn: AsyncConnection
) -> None:
    sub = (await _claim(client, alice, "old-name")).json()
    plain = (await client.post(BASE, headers=alice.headers)).json()
    await client.put(USE, json={"use_relay_subdomain": True}, headers=alice.headers)
    on_old = [(await client.post(BASE, headers=alice.headers)).json() for _ in range(2)]
    contact = await client.post(
        f"{BASE}/{on_old[0]['id']}/contacts",
        json={"email": "shop@example.org"},
        headers=alice.headers,
    )
    assert contact.status_code == 200
    renamed = await client.put(
        f"{SUBS}/{sub['id']}", json={"subdomain": "new-name"}, headers=alice.headers
    )
    assert renamed.status_code == 200
    ids = [a["id"] for a in (await client.get(BASE, headers=alice.headers)).json()]
    assert ids == [plain["id"]]
    for gone in on_old:
        assert (await client.get(f"{BASE}/{gone['id']}", headers=alice.headers)).status_code == 404
    on_new = (await client.post(BASE, headers=alice.headers)).json()
    assert on_new["full_address"].endswith(f"@new-name.{DOMAIN}")
    assert (await client.delete(f"{SUBS}/{sub['id']}", headers=alice.headers)).status_code == 204
    ids = [a["id"] for a in (await client.get(BASE, headers=alice.headers)).json()]
    assert ids == [plain["id"]]
    assert (await client.get(USE, headers=alice.headers)).json() == {"use_relay_subdomain": False}
    count = await conn.scalar(select(func.count()).select_from(addresses))
    assert count == 1
    # The contact's reverse alias went with its address.
    assert await conn.scalar(select(func.count()).select_from(reverse_aliases)) == 0


ADDY = "/api/v1/aliases"
OPTIONS = "/api/v1/domain-options"


def _addy(who: Caller) -> dict[str, str]:
    return {**who.headers, "Content-Type": "application/json"}


async def test_addy_domain_options_list_the_subdomain(
    client: httpx.AsyncClient, alice: Caller, bob: Caller
) -> None:
    await _claim(client, alice, "alice-addy")
    options = (await client.get(OPTIONS, headers=_addy(alice))).json()
    assert options["data"] == [DOMAIN, f"alice-addy.{DOMAIN}"]
    assert options["defaultAliasDomain"] == DOMAIN
    await client.put(USE, json={"use_relay_subdomain": True}, headers=alice.headers)
    options = (await client.get(OPTIONS, headers=_addy(alice))).json()
    assert options["defaultAliasDomain"] == f"alice-addy.{DOMAIN}"
    assert (await client.get(OPTIONS, headers=_addy(bob))).json()["data"] == [DOMAIN]


@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
async def test_addy_create_goes_where_it_is_asked(
    client: httpx.AsyncClient, alice: Caller, bob: Caller
) -> None:
    await _claim(client, alice, "alice-addy")
    on_sub = await client.post(ADDY, json={"domain": f"Alice-Addy.{DOMAIN}"}, headers=_addy(alice))
    assert on_sub.status_code == 201
    data = on_sub.json()["data"]
    assert data["domain"] == f"alice-addy.{DOMAIN}"
    assert data["email"] == f"{data['local_part']}@alice-addy.{DOMAIN}"
    on_domain = (await client.post(ADDY, json={"domain": DOMAIN}, headers=_addy(alice))).json()
    assert on_domain["data"]["domain"] == DOMAIN
    # Bob may not make addresses on Alice's subdomain.
    refused = await client.post(ADDY, json={"domain": f"alice-addy.{DOMAIN}"}, headers=_addy(bob))
    assert refused.status_code == 422
    assert "domain" in refused.json()["errors"]
    listed = {a["full_address"] for a in (await client.get(BASE, headers=alice.headers)).json()}
    assert listed == {data["email"], on_domain["data"]["email"]}
    assert (await client.get(BASE, headers=bob.headers)).json() == []
    # No domain named: as the owner chose.
    await client.put(USE, json={"use_relay_subdomain": True}, headers=alice.headers)
    default = (await client.post(ADDY, json={}, headers=_addy(alice))).json()
    assert default["data"]["domain"] == f"alice-addy.{DOMAIN}"


async def test_simplelogin_create_follows_use_subdomain(
    client: httpx.AsyncClient, alice: Caller
) -> None:
    await _claim(client, alice, "alice-sl")
    await client.put(USE, json={"use_relay_subdomain": True}, headers=alice.headers)
    made = await client.post(
        "/api/alias/random/new", json={"note": "n"}, headers={"Authentication": alice.key}
    )
    assert made.status_code == 201
    assert made.json()["email"].endswith(f"@alice-sl.{DOMAIN}")


async def test_a_refused_rename_deletes_nothing(
    client: httpx.AsyncClient, alice: Caller, bob: Caller
) -> None:
    sub = (await _claim(client, alice, "keep-mine")).json()
    await _claim(client, bob, "bobs-name")
    await client.put(USE, json={"use_relay_subdomain": True}, headers=alice.headers)
    made = (await client.post(BASE, headers=alice.headers)).json()
    path = f"{SUBS}/{sub['id']}"
    for name in ("bobs-name", "Bad_Name", "admin-x"):
        refused = await client.put(path, json={"subdomain": name}, headers=alice.headers)
        assert refused.status_code == 422, name
    assert (await client.get(BASE, headers=alice.headers)).json() == [made]
    assert (await client.get(SUBS, headers=alice.headers)).json() == [sub]


INFRASTRUCTURE_NAMES = (
    "mail",
    "smtp",
    "imap",
    "api",
    "mta-sts",
    "autoconfig",
    "autodiscover",
    "webmail",
    "ns1",
    "bounce",
    "dmarc",
    "relay",
    "localhost",
    "mx01",
    "smtp-2",
)


async def test_infrastructure_names_and_the_relays_mail_host_are_not_available(
    reconfigured: ClientFactory, alice: Caller, conn: AsyncConnection
) -> None:
    """Issue 21 item 3: names a mail or web service publishes, and the label of the
    relay's own mail host (MASKMAIL_SMTP_HOSTNAME), are nobody's."""
    async with reconfigured(smtp_hostname=f"inbound.{DOMAIN}") as client:
        for name in (*INFRASTRUCTURE_NAMES, "inbound"):
            answer = await _claim(client, alice, name)
            assert answer.status_code == 422, name
            assert answer.json()["message"] == "this subdomain is not available", name
        made = await _claim(client, alice, "mailroom")
        assert made.status_code == 200
        renamed = await client.put(
            f"{SUBS}/{made.json()['id']}", json={"subdomain": "mta-sts"}, headers=alice.headers
        )
        assert renamed.status_code == 422
    assert list(await conn.scalars(select(subdomains.c.subdomain))) == ["mailroom"]


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("Shop", "lower case: 'shop', not 'Shop'"),
        ("shop.", "without dots (such as 'shop')"),
        ("shop.example", "without dots"),
        ("-shop", "start or end with '-'"),
        ("sh_op", "letters, digits and '-' only"),
    ],
)
async def test_a_wrong_name_is_told_what_is_wrong(
    client: httpx.AsyncClient, alice: Caller, name: str, says: str
) -> None:
    """Not "may not contain control characters": refused, with what to type instead,
    whether claimed or renamed to."""
    claimed = await _claim(client, alice, name)
    made = (await _claim(client, alice, "shop")).json()
    renamed = await client.put(
        f"{SUBS}/{made['id']}", json={"subdomain": name}, headers=alice.headers
    )
    for answer in (claimed, renamed):
        assert answer.status_code == 422
        body = answer.json()
        assert says in body["message"] and "control" not in body["message"], body
        assert body["details"]["field"] == "subdomain"


async def test_names_taken_a_day_are_limited(
    reconfigured: ClientFactory, alice: Caller, bob: Caller, conn: AsyncConnection
) -> None:
    """Three a day: a claim and two renames, then 429 for the next rename, for a claim
    after deleting, and nothing changes; another user has their own allowance."""
    async with reconfigured(subdomain_names_per_day=3) as client:
        made = (await _claim(client, alice, "first-one")).json()
        path = f"{SUBS}/{made['id']}"
        for name in ("second-one", "third-one"):
            answer = await client.put(path, json={"subdomain": name}, headers=alice.headers)
            assert answer.status_code == 200, answer.text
        refused = await client.put(path, json={"subdomain": "fourth-one"}, headers=alice.headers)
        assert refused.status_code == 429 and refused.json()["code"] == "rate_limited"
        assert 0 < int(refused.headers["Retry-After"]) <= 86_400
        # The catch-all switch is not a name.
        switched = await client.put(path, json={"catch_all": False}, headers=alice.headers)
        assert switched.status_code == 200
        assert (await client.delete(path, headers=alice.headers)).status_code == 204
        assert (await _claim(client, alice, "fifth-one")).status_code == 429
        assert (await _claim(client, bob, "bobs-one")).status_code == 200
    names = set(await conn.scalars(select(subdomains.c.subdomain)))
    assert names == {"bobs-one"}
