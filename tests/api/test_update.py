"""GET, PATCH, PUT and DELETE on one address: SPEC decision 9."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.api.conftest import BASE, Caller

pytestmark = pytest.mark.anyio


async def _new(client: httpx.AsyncClient, caller: Caller) -> dict[str, object]:
    body: dict[str, object] = (await client.post(BASE, headers=caller.headers)).json()
    return body


async def test_read_one(client: httpx.AsyncClient, alice: Caller) -> None:
    made = await _new(client, alice)
    response = await client.get(f"{BASE}/{made['id']}", headers=alice.headers)
    assert (response.status_code, response.json()) == (200, made)


@pytest.mark.parametrize("method", ["PATCH", "PUT"])
async def test_change_only_the_given_fields(
    client: httpx.AsyncClient, alice: Caller, method: str
) -> None:
    made = await _new(client, alice)
    url = f"{BASE}/{made['id']}"
    before = int(time.time())
    response = await client.request(method, url, headers=alice.headers, json={"enabled": False})
    assert response.status_code == 200
    changed = response.json()
    assert changed["enabled"] is False
    assert isinstance(changed["updated_time"], int) and changed["updated_time"] >= before
    untouched = {k: v for k, v in changed.items() if k not in {"enabled", "updated_time"}}
    assert untouched == {k: v for k, v in made.items() if k not in {"enabled", "updated_time"}}
    again = await client.request(
        method, url, headers=alice.headers,
        json={"description": "Website: shop.example. ✓", "block_spam": True},
    )  # fmt: skip
    body = again.json()
    assert (body["description"], body["block_spam"], body["enabled"]) == (
        "Website: shop.example. ✓", True, False,
    )  # fmt: skip
    assert (await client.get(url, headers=alice.headers)).json() == body


async def test_description_of_64_characters_is_accepted(
    client: httpx.AsyncClient, alice: Caller
) -> None:
    made = await _new(client, alice)
    text = "é" * 64
    response = await client.patch(
        f"{BASE}/{made['id']}", headers=alice.headers, json={"description": text}
    )
    assert (response.status_code, response.json()["description"]) == (200, text)


async def test_empty_object_changes_nothing(client: httpx.AsyncClient, alice: Caller) -> None:
    made = await _new(client, alice)
    response = await client.patch(f"{BASE}/{made['id']}", headers=alice.headers, json={})
    assert (response.status_code, response.json()) == (200, made)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"description": "x" * 65}, "description"),
        ({"description": 5}, "description"),
        ({"description": None}, "description"),
        ({"description": "line\nbreak"}, "description"),
        ({"description": "nul\x00"}, "description"),
        ({"enabled": "false"}, "enabled"),
        ({"enabled": 0}, "enabled"),
        ({"enabled": None}, "enabled"),
        ({"block_spam": "yes"}, "block_spam"),
        ({"address": "chosen"}, "address"),
        ({"num_forwarded": 99}, "num_forwarded"),
        ({"enabled": False, "id": 3}, "id"),
        ([{"enabled": False}], "body"),
        ("enabled", "body"),
    ],
)
@pytest.mark.parametrize("method", ["PATCH", "PUT"])
async def test_bad_bodies_get_422_naming_the_field_and_change_nothing(
    client: httpx.AsyncClient, alice: Caller, method: str, body: object, field: str
) -> None:
    made = await _new(client, alice)
    url = f"{BASE}/{made['id']}"
    response = await client.request(method, url, headers=alice.headers, json=body)
    assert response.status_code == 422
    error = response.json()
    assert error["code"] == "validation_error"
    assert error["details"]["field"] == field
    assert (await client.get(url, headers=alice.headers)).json() == made


@pytest.mark.parametrize("raw", [b"", b"{", b"not json", b"\xff\xfe"])
async def test_unparseable_bodies_get_422(
    client: httpx.AsyncClient, alice: Caller, raw: bytes
) -> None:
    made = await _new(client, alice)
    response = await client.patch(
        f"{BASE}/{made['id']}",
        headers={**alice.headers, "Content-Type": "application/json"},
        content=raw,
    )
    assert response.status_code == 422
    assert response.json()["code"] == "validation_error"


async def test_delete_answers_204_then_the_address_is_gone(
    client: httpx.AsyncClient, alice: Caller
) -> None:
    made = await _new(client, alice)
    url = f"{BASE}/{made['id']}"
    response = await client.delete(url, headers=alice.headers)
    assert (response.status_code, response.content) == (204, b"")
    assert (await client.get(url, headers=alice.headers)).status_code == 404
    assert (await client.delete(url, headers=alice.headers)).status_code == 404
    assert (await client.get(BASE, headers=alice.headers)).json() == []


@pytest.mark.parametrize(
    "bad_id", ["abc", "0", "-1", "1.5", "99999999999999999999", "9223372036854775808"]
)
async def test_malformed_or_out_of_range_ids_are_404(
    client: httpx.AsyncClient, alice: Caller, bad_id: str
) -> None:
    for method in ("GET", "PATCH", "PUT", "DELETE"):
        response = await client.request(method, f"{BASE}/{bad_id}", headers=alice.headers, json={})
        assert response.status_code == 404, (method, bad_id)
        assert response.json()["code"] == "not_found"
