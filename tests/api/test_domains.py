"""/v3/relay/domains (issue 16 items 1-3): add, check against a DNS server of the test's
own, switch catch-all, delete; and addresses made on a verified domain."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store.tables import addresses, custom_domains
from tests.api.conftest import BASE, DOMAIN, Caller, ClientFactory
from tests.dns_server import running_dns
from tests.support import free_port

pytestmark = pytest.mark.anyio

DOMAINS = "/v3/relay/domains"
KEYS = {"id", "domain", "verified", "checks", "records", "catch_all", "created_time"}


@pytest.fixture
def zone() -> dict[str, list[tuple[str, str]]]:
    return {}


@pytest.fixture
def dns_port(zone: dict[str, list[tuple[str, str]]]) -> Iterator[int]:
    with running_dns(zone) as port:
        yield port


def publish(zone: dict[str, list[tuple[str, str]]], body: dict[str, object], *only: str) -> None:
    """Put the domain's records (those of the checks named, or all) into the zone."""
    for record in body["records"]:  # type: ignore[attr-defined]
        if only and record["check"] not in only:
            continue
        value = record["value"]
        if record["type"] == "MX":
            text = f"{record['priority']} {value}."
        else:
            text = " ".join(f'"{value[i : i + 200]}"' for i in range(0, len(value), 200))
        zone.setdefault(f"{record['name']}.", []).append((record["type"], text))


async def _add(client: httpx.AsyncClient, who: Caller, name: str) -> httpx.Response:
    return await client.post(DOMAINS, json={"domain": name}, headers=who.headers)


async def test_add_lists_the_records_to_create(reconfigured: ClientFactory, alice: Caller) -> None:
    async with reconfigured(smtp_hostname="mx.relay.test") as client:
        made = await _add(client, alice, "Example.ORG.")
        assert made.status_code == 200, made.text
        body = made.json()
        listed = (await client.get(DOMAINS, headers=alice.headers)).json()
        one = (await client.get(f"{DOMAINS}/{body['id']}", headers=alice.headers)).json()
    assert set(body) == KEYS and listed == [body] and one == body
    assert body["domain"] == "example.org" and body["verified"] is False
    assert body["catch_all"] is True
    assert body["checks"] == dict.fromkeys(("ownership", "mx", "spf", "dkim", "dmarc"), False)
    records = {r["check"]: r for r in body["records"]}
    assert list(records) == ["ownership", "mx", "spf", "dkim", "dmarc"]
    assert records["ownership"]["type"] == "TXT" and records["ownership"]["name"] == "example.org"
    assert records["ownership"]["value"].startswith("maskmail-verification=")
    assert records["mx"] == {
        "check": "mx",
        "type": "MX",
        "name": "example.org",
        "value": "mx.relay.test",
        "priority": 10,
    }
    assert records["spf"]["value"] == f"v=spf1 include:{DOMAIN} ~all"
    selector, _, rest = records["dkim"]["name"].partition("._domainkey.")
    assert rest == "example.org" and selector.startswith("maskmail-")
    assert records["dkim"]["value"].startswith("v=DKIM1; k=rsa; p=MII")
    assert records["dmarc"]["name"] == "_dmarc.example.org"
    assert records["dmarc"]["value"].startswith("v=DMARC1; p=quarantine")


async def test_each_domain_has_its_own_token_and_key(
    client: httpx.AsyncClient, alice: Caller
) -> None:
    one = (await _add(client, alice, "one.example")).json()
    two = (await _add(client, alice, "two.example")).json()
    for check in ("ownership", "dkim"):
        [a] = [r for r in one["records"] if r["check"] == check]
        [b] = [r for r in two["records"] if r["check"] == check]
        assert a["value"] != b["value"]


async def test_refusals_are_422_and_write_nothing(
    client: httpx.AsyncClient, alice: Caller, bob: Caller, conn: AsyncConnection
) -> None:
    assert (await _add(client, bob, "bobs.example")).status_code == 200
    for bad in (
        DOMAIN,
        f"shop.{DOMAIN}",
        "RELAY.test",
        "bobs.example",
        "localhost",
        "1.2.3.4",
        "-bad.example",
        "a..example",
        "x" * 64 + ".example",
    ):
        answer = await _add(client, alice, bad)
        assert answer.status_code == 422, bad
        assert answer.json()["code"] == "validation_error"
    for body in ({}, {"domain": 5}, {"domain": "ok.example", "extra": 1}, {"domain": None}):
        assert (await client.post(DOMAINS, json=body, headers=alice.headers)).status_code == 422
    # Adding it twice is refused too.
    assert (await _add(client, bob, "bobs.example")).status_code == 422
    assert await conn.scalar(select(func.count()).select_from(custom_domains)) == 1


async def test_a_domain_the_relay_received_for_before_is_refused(
    reconfigured: ClientFactory, alice: Caller
) -> None:
    async with reconfigured(domain="old.test") as client:
        assert (await client.post(BASE, headers=alice.headers)).status_code == 200
    async with reconfigured() as client:
        assert (await _add(client, alice, "old.test")).status_code == 422
        assert (await _add(client, alice, "x.old.test")).status_code == 422
        assert (await _add(client, alice, "notold.test")).status_code == 200


async def test_the_domain_limit(reconfigured: ClientFactory, alice: Caller) -> None:
    async with reconfigured(max_domains_per_user=2) as client:
        for name in ("a.example", "b.example"):
            assert (await _add(client, alice, name)).status_code == 200
        refused = await _add(client, alice, "c.example")
        listed = (await client.get(DOMAINS, headers=alice.headers)).json()
    assert refused.status_code == 403
    assert refused.json()["code"] == "domain_limit_reached"
    assert refused.json()["details"] == {"limit": 2}
    assert [d["domain"] for d in listed] == ["a.example", "b.example"]


async def test_check_verifies_on_the_ownership_record(
    reconfigured: ClientFactory,
    alice: Caller,
    zone: dict[str, list[tuple[str, str]]],
    dns_port: int,
) -> None:
    async with reconfigured(dns_resolver=f"127.0.0.1:{dns_port}") as client:
        body = (await _add(client, alice, "mine.example")).json()
        check = f"{DOMAINS}/{body['id']}/check"
        nothing = (await client.post(check, headers=alice.headers)).json()
        publish(zone, body, "ownership")
        owned = (await client.post(check, headers=alice.headers)).json()
        publish(zone, body, "mx", "spf", "dkim", "dmarc")
        complete = (await client.post(check, headers=alice.headers)).json()
    assert nothing["verified"] is False and not any(nothing["checks"].values())
    assert owned["verified"] is True
    assert owned["checks"] == {
        "ownership": True,
        "mx": False,
        "spf": False,
        "dkim": False,
        "dmarc": False,
    }
    assert complete["verified"] is True and all(complete["checks"].values())


async def test_wrong_records_do_not_pass(
    reconfigured: ClientFactory,
    alice: Caller,
    zone: dict[str, list[tuple[str, str]]],
    dns_port: int,
) -> None:
    async with reconfigured(dns_resolver=f"127.0.0.1:{dns_port}") as client:
        body = (await _add(client, alice, "wrong.example")).json()
        zone["wrong.example."] = [
            ("TXT", '"maskmail-verification=not-the-token"'),
            ("TXT", '"v=spf1 include:other.example ~all"'),
            ("MX", "10 mx.elsewhere.example."),
        ]
        zone["_dmarc.wrong.example."] = [("TXT", '"v=DMARC1; p=none"')]
        checked = await client.post(f"{DOMAINS}/{body['id']}/check", headers=alice.headers)
    assert checked.json()["verified"] is False
    assert not any(checked.json()["checks"].values())


@pytest.mark.slow
async def test_an_unreachable_resolver_keeps_the_last_results(
    reconfigured: ClientFactory,
    alice: Caller,
    zone: dict[str, list[tuple[str, str]]],
    dns_port: int,
) -> None:
    async with reconfigured(dns_resolver=f"127.0.0.1:{dns_port}") as client:
        body = (await _add(client, alice, "kept.example")).json()
        publish(zone, body)
        done = await client.post(f"{DOMAINS}/{body['id']}/check", headers=alice.headers)
    assert all(done.json()["checks"].values())
    async with reconfigured(dns_resolver=f"127.0.0.1:{free_port()}") as client:
        again = await client.post(f"{DOMAINS}/{body['id']}/check", headers=alice.headers)
    assert again.status_code == 200 and again.json() == done.json()


async def test_catch_all_delete_and_other_users(
    client: httpx.AsyncClient, alice: Caller, bob: Caller, conn: AsyncConnection
) -> None:
    body = (await _add(client, alice, "cat.example")).json()
    path = f"{DOMAINS}/{body['id']}"
    for method in ("GET", "PATCH", "DELETE"):
        answer = await client.request(method, path, headers=bob.headers, json={"catch_all": False})
        assert answer.status_code == 404, method
    assert (await client.post(f"{path}/check", headers=bob.headers)).status_code == 404
    changed = await client.patch(path, json={"catch_all": False}, headers=alice.headers)
    assert changed.status_code == 200 and changed.json()["catch_all"] is False
    for bad in ({}, {"catch_all": "no"}, {"catch_all": False, "domain": "x.example"}):
        assert (await client.patch(path, json=bad, headers=alice.headers)).status_code == 422
    assert (await client.delete(path, headers=alice.headers)).status_code == 204
    assert (await client.get(path, headers=alice.headers)).status_code == 404
    assert await conn.scalar(select(func.count()).select_from(custom_domains)) == 0


async def _verified(
    client: httpx.AsyncClient, who: Caller, name: str, zone: dict[str, list[tuple[str, str]]]
) -> dict[str, object]:
    body = (await _add(client, who, name)).json()
    publish(zone, body)
    checked = await client.post(f"{DOMAINS}/{body['id']}/check", headers=who.headers)
    assert checked.json()["verified"] is True
    return dict(checked.json())


async def test_addresses_on_a_verified_domain(
    reconfigured: ClientFactory,
    alice: Caller,
    bob: Caller,
    zone: dict[str, list[tuple[str, str]]],
    dns_port: int,
    conn: AsyncConnection,
) -> None:
    async with reconfigured(dns_resolver=f"127.0.0.1:{dns_port}") as client:
        pending = (await _add(client, alice, "pending.example")).json()
        # Written in upper case with a final dot, it is the same domain at every step.
        domain = await _verified(client, alice, "Alice.EXAMPLE.", zone)
        made = await client.post(BASE, json={"domain": "alice.example"}, headers=alice.headers)
        written = await client.post(BASE, json={"domain": "ALICE.example."}, headers=alice.headers)
        plain = await client.post(BASE, headers=alice.headers)
        ignored = await client.post(BASE, json={"description": "x"}, headers=alice.headers)
        unverified = await client.post(
            BASE, json={"domain": "pending.example"}, headers=alice.headers
        )
        theirs = await client.post(BASE, json={"domain": "alice.example"}, headers=bob.headers)
        wrong_type = await client.post(BASE, json={"domain": 5}, headers=alice.headers)
        gone = await client.delete(f"{DOMAINS}/{domain['id']}", headers=alice.headers)
        after = (await client.get(BASE, headers=alice.headers)).json()
    assert pending["verified"] is False and domain["domain"] == "alice.example"
    assert made.status_code == 200, made.text
    assert written.json()["domain"] == "alice.example", written.text
    assert made.json()["domain"] == "alice.example"
    assert made.json()["full_address"].endswith("@alice.example")
    assert made.json()["subdomain"] is None
    assert plain.json()["domain"] == DOMAIN and ignored.json()["domain"] == DOMAIN
    for refused in (unverified, theirs, wrong_type):
        assert refused.status_code == 422 and refused.json()["details"]["field"] == "domain"
    # Deleting the domain deleted its address, and only that one.
    assert gone.status_code == 204
    assert sorted(a["domain"] for a in after) == [DOMAIN, DOMAIN]
    assert await conn.scalar(select(func.count()).select_from(addresses)) == 2


async def test_addy_and_simplelogin_offer_and_accept_verified_domains(
    reconfigured: ClientFactory,
    alice: Caller,
    bob: Caller,
    zone: dict[str, list[tuple[str, str]]],
    dns_port: int,
) -> None:
    sl = {"Authentication": alice.key}
    async with reconfigured(dns_resolver=f"127.0.0.1:{dns_port}") as client:
        before = (await client.get("/api/v5/alias/options", headers=sl)).json()
        await _add(client, alice, "pending.example")
        await _verified(client, alice, "alice.example", zone)
        options = (await client.get("/api/v1/domain-options", headers=alice.headers)).json()
        addy = await client.post(
            "/api/v1/aliases", json={"domain": "alice.example"}, headers=alice.headers
        )
        sl_options = (
            await client.get("/api/v5/alias/options?hostname=shop.example", headers=sl)
        ).json()
        chosen = await client.post(
            "/api/v3/alias/custom/new",
            json={"alias_prefix": "Shop.News", "signed_suffix": "@alice.example", "note": "x"},
            headers=sl,
        )
        again = await client.post(
            "/api/v3/alias/custom/new",
            json={"alias_prefix": "shop.news", "signed_suffix": "@alice.example"},
            headers=sl,
        )
        pending = await client.post(
            "/api/v3/alias/custom/new",
            json={"alias_prefix": "a", "signed_suffix": "@pending.example"},
            headers=sl,
        )
        theirs = await client.post(
            "/api/v3/alias/custom/new",
            json={"alias_prefix": "b", "signed_suffix": "@alice.example"},
            headers={"Authentication": bob.key},
        )
    assert before["suffixes"] == [] and before["can_create"] is False
    assert options["data"] == [DOMAIN, "alice.example"]
    assert addy.status_code == 201 and addy.json()["data"]["email"].endswith("@alice.example")
    assert sl_options["prefix_suggestion"] == "shop"
    assert sl_options["suffixes"] == [
        {
            "suffix": "@alice.example",
            "signed_suffix": "@alice.example",
            "is_custom": True,
            "is_premium": False,
        }
    ]
    assert chosen.status_code == 201, chosen.text
    assert chosen.json()["alias"] == "shop.news@alice.example" and chosen.json()["note"] == "x"
    for refused in (again, pending, theirs):
        assert refused.status_code == 422 and set(refused.json()) == {"error"}
