"""POST /v3/relay/addresses/{id}/contacts: the reverse alias to write first through."""

from __future__ import annotations

import time

import httpx
import pytest

from maskmail.core.reverse import is_alias_local
from tests.api.conftest import BASE, DOMAIN, Caller

pytestmark = pytest.mark.anyio


async def _address_id(client: httpx.AsyncClient, caller: Caller) -> int:
    response = await client.post(BASE, headers=caller.headers)
    assert response.status_code == 200
    return int(response.json()["id"])


async def test_contact_gives_a_stable_reverse_alias(
    client: httpx.AsyncClient, alice: Caller
) -> None:
    address_id = await _address_id(client, alice)
    url = f"{BASE}/{address_id}/contacts"
    before = int(time.time())
    first = await client.post(url, headers=alice.headers, json={"email": "Shop@Example.COM"})
    assert first.status_code == 200, first.text
    body = first.json()
    assert set(body) == {"address_id", "email", "reverse_alias", "created_time"}
    assert body["address_id"] == address_id
    assert body["email"] == "shop@example.com"
    local, _, domain = body["reverse_alias"].rpartition("@")
    assert domain == DOMAIN and is_alias_local(local)
    assert body["created_time"] >= before
    again = await client.post(url, headers=alice.headers, json={"email": "shop@example.com"})
    assert again.json() == body
    other = await client.post(url, headers=alice.headers, json={"email": "bank@example.com"})
    assert other.json()["reverse_alias"] != body["reverse_alias"]


@pytest.mark.slow
async def test_contacts_of_two_addresses_differ(client: httpx.AsyncClient, alice: Caller) -> None:
    one, two = await _address_id(client, alice), await _address_id(client, alice)
    aliases = {
        (
            await client.post(
                f"{BASE}/{address_id}/contacts",
                headers=alice.headers,
                json={"email": "shop@example.com"},
            )
        ).json()["reverse_alias"]
        for address_id in (one, two)
    }
    assert len(aliases) == 2


async def test_someone_elses_address_is_not_found(
    client: httpx.AsyncClient, alice: Caller, bob: Caller
) -> None:
    address_id = await _address_id(client, alice)
    for caller_id in (address_id, 2**62):
        response = await client.post(
            f"{BASE}/{caller_id}/contacts", headers=bob.headers, json={"email": "shop@example.com"}
        )
        assert response.status_code == 404
        assert response.json()["code"] == "not_found"


async def test_no_key_is_unauthorized(client: httpx.AsyncClient, alice: Caller) -> None:
    address_id = await _address_id(client, alice)
    response = await client.post(
        f"{BASE}/{address_id}/contacts", json={"email": "shop@example.com"}
    )
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].lower().startswith("bearer")


@pytest.mark.parametrize(
    "body",
    [
        {"email": "not an address"},
        {"email": "a@b@c.com"},
        {"email": "shop@example.com\r\nBcc: x@y.com"},
        {"email": ""},
        {"email": f"someone@{DOMAIN}"},
        {"email": f"r.abc@{DOMAIN.upper()}"},
        {"email": 7},
        {"email": None},
        {},
        {"email": "shop@example.com", "name": "x"},
    ],
)
async def test_bad_body_is_422_and_makes_nothing(
    client: httpx.AsyncClient, alice: Caller, body: object
) -> None:
    address_id = await _address_id(client, alice)
    url = f"{BASE}/{address_id}/contacts"
    response = await client.post(url, headers=alice.headers, json=body)
    assert response.status_code == 422, response.text
    error = response.json()
    assert error["code"] == "validation_error"
    assert error["details"]["field"] in {"email", "name"}
    made = await client.post(url, headers=alice.headers, json={"email": "shop@example.com"})
    assert made.status_code == 200


async def test_documented_in_openapi(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    operation = schema["paths"]["/v3/relay/addresses/{address_id}/contacts"]["post"]
    assert {"200", "401", "404", "422"} <= set(operation["responses"])
    ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    request = schema["components"]["schemas"][ref.rpartition("/")[2]]
    assert request["required"] == ["email"]
    ok = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert ok.endswith("/Contact")
