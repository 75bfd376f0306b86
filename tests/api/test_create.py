"""POST /v3/relay/addresses: SPEC decisions 5 to 8."""

from __future__ import annotations

import hashlib
import re
import time

import httpx
import pytest
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store.tables import api_keys
from tests.api.conftest import BASE, DOMAIN, Caller, client_with, make_settings

pytestmark = pytest.mark.anyio


async def test_create_answers_200_with_initial_values(
    client: httpx.AsyncClient, alice: Caller
) -> None:
    before = int(time.time())
    response = await client.post(BASE, headers=alice.headers)
    after = int(time.time())
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {
        "id", "address", "enabled", "block_spam", "description", "created_time",
        "updated_time", "num_forwarded", "num_blocked", "num_replied", "num_spam",
        "domain", "subdomain", "full_address",
    }  # fmt: skip
    assert body["enabled"] is True
    assert body["block_spam"] is False
    assert body["updated_time"] is None
    assert body["description"] == ""
    assert [body[k] for k in ("num_forwarded", "num_blocked", "num_replied", "num_spam")] == [0] * 4
    assert isinstance(body["created_time"], int) and before <= body["created_time"] <= after
    assert body["domain"] == DOMAIN
    assert body["subdomain"] is None
    assert body["full_address"] == f"{body['address']}@{DOMAIN}"
    assert re.fullmatch(r"[a-z0-9]{8}", body["address"])


async def test_any_body_is_ignored(client: httpx.AsyncClient, alice: Caller) -> None:
    response = await client.post(
        BASE,
        headers={**alice.headers, "Content-Type": "application/json"},
        content=b'{"address": "chosen", "enabled": false, "description": "x"}',
    )
    assert response.status_code == 200
    body = response.json()
    assert body["address"] != "chosen"
    assert body["enabled"] is True
    assert body["description"] == ""
    garbage = await client.post(BASE, headers=alice.headers, content=b"\xff\x00not json")
    assert garbage.status_code == 200


async def test_created_address_is_listed(client: httpx.AsyncClient, alice: Caller) -> None:
    created = (await client.post(BASE, headers=alice.headers)).json()
    listed = (await client.get(BASE, headers=alice.headers)).json()
    assert listed == [created]


async def test_address_length_is_configurable(
    database_url: str, conn: AsyncConnection, alice: Caller
) -> None:
    async with client_with(make_settings(database_url, address_length=14)) as client:
        body = (await client.post(BASE, headers=alice.headers)).json()
    assert re.fullmatch(r"[a-z0-9]{14}", body["address"])


def test_address_length_below_six_is_refused() -> None:
    with pytest.raises(ValidationError):
        make_settings("sqlite://", address_length=5)


async def test_only_the_hash_of_a_key_is_stored(conn: AsyncConnection, alice: Caller) -> None:
    stored = (await conn.execute(select(api_keys.c.key_hash))).scalars().all()
    assert hashlib.sha256(alice.key.encode()).hexdigest() in stored
    assert all(alice.key not in value for value in stored)
