"""/v3/relay/keys: the caller's keys by name, never the key; revoking one stops it at
once; another user's key is a 404, as an unknown one is."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.core import keys as key_rules
from maskmail.services import api_keys
from maskmail.store import accounts
from maskmail.store.engine import transaction
from tests.api.conftest import BASE, Caller

pytestmark = pytest.mark.anyio

KEYS = "/v3/relay/keys"


async def _named_key(engine: AsyncEngine, caller: Caller, name: str) -> str:
    async with transaction(engine) as conn:
        return await api_keys.create(conn, caller.user_id, name)


async def test_the_list_names_each_live_key_and_marks_the_current_one(
    app: FastAPI, client: httpx.AsyncClient, clean: AsyncEngine, alice: Caller, bob: Caller
) -> None:
    laptop = await _named_key(clean, alice, " laptop ")
    await _named_key(clean, bob, "bob's")
    assert (await client.get(BASE, headers=alice.headers)).status_code == 200  # a use
    await app.state.key_uses.write()  # noted, and written off the request path
    answer = await client.get(KEYS, headers=alice.headers)
    assert answer.status_code == 200
    listed = answer.json()
    assert [(k["name"], k["current"]) for k in listed] == [("laptop", False), (None, True)]
    assert set(listed[0]) == {
        "id", "name", "prefix", "created_time", "last_used_time", "current"
    }  # fmt: skip
    assert listed[0]["prefix"] == laptop[: accounts.PREFIX_LENGTH]
    assert listed[0]["last_used_time"] is None and listed[1]["last_used_time"] is not None
    assert laptop not in answer.text and alice.key not in answer.text
    assert key_rules.hash_key(laptop) not in answer.text


async def test_a_revoked_key_stops_at_once_and_leaves_the_list(
    client: httpx.AsyncClient, clean: AsyncEngine, alice: Caller
) -> None:
    spare = await _named_key(clean, alice, "spare")
    spare_headers = {"Authorization": f"Bearer {spare}"}
    assert (await client.get(BASE, headers=spare_headers)).status_code == 200
    [spare_id] = [k["id"] for k in (await client.get(KEYS, headers=alice.headers)).json()
                  if k["name"] == "spare"]  # fmt: skip
    gone = await client.delete(f"{KEYS}/{spare_id}", headers=alice.headers)
    assert gone.status_code == 204 and gone.content == b""
    assert (await client.get(BASE, headers=spare_headers)).status_code == 401
    names = [k["name"] for k in (await client.get(KEYS, headers=alice.headers)).json()]
    assert names == [None]
    again = await client.delete(f"{KEYS}/{spare_id}", headers=alice.headers)
    assert again.status_code == 404 and again.json()["code"] == "not_found"


async def test_a_key_may_revoke_itself(client: httpx.AsyncClient, alice: Caller) -> None:
    [own] = (await client.get(KEYS, headers=alice.headers)).json()
    assert (await client.delete(f"{KEYS}/{own['id']}", headers=alice.headers)).status_code == 204
    assert (await client.get(KEYS, headers=alice.headers)).status_code == 401


async def test_another_users_key_is_a_404_and_stays_live(
    client: httpx.AsyncClient, clean: AsyncEngine, alice: Caller, bob: Caller
) -> None:
    bobs = await _named_key(clean, bob, "bob's")
    bob_ids = [k["id"] for k in (await client.get(KEYS, headers=bob.headers)).json()]
    alice_sees = [k["id"] for k in (await client.get(KEYS, headers=alice.headers)).json()]
    assert set(bob_ids).isdisjoint(alice_sees)
    for key_id in (*bob_ids, 2**63 - 1, 2**64, 0):
        answer = await client.delete(f"{KEYS}/{key_id}", headers=alice.headers)
        assert answer.status_code == 404, key_id
        assert answer.json() == {"code": "not_found", "message": "no such key", "details": {}}
    assert (await client.get(BASE, headers={"Authorization": f"Bearer {bobs}"})).status_code == 200


async def test_the_keys_routes_need_a_key(client: httpx.AsyncClient) -> None:
    for method, path in (("GET", KEYS), ("DELETE", f"{KEYS}/1")):
        answer = await client.request(method, path)
        assert answer.status_code == 401 and answer.json()["code"] == "unauthorized"
