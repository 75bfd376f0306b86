"""The address limit, the per-key rate limit and the per-client one for wrong keys, in
memory and shared through Redis."""

from __future__ import annotations

import secrets

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from tests.api.conftest import BASE, Caller, client_with, make_settings

pytestmark = pytest.mark.anyio
REDIS = "redis://127.0.0.1:6379/0"


async def test_address_limit_is_403(
    database_url: str, conn: AsyncConnection, alice: Caller, bob: Caller
) -> None:
    async with client_with(make_settings(database_url, max_addresses_per_user=2)) as client:
        assert [(await client.post(BASE, headers=alice.headers)).status_code for _ in "ab"] == [
            200
        ] * 2
        refused = await client.post(BASE, headers=alice.headers)
        assert refused.status_code == 403
        assert refused.json()["code"] == "address_limit_reached"
        assert len((await client.get(BASE, headers=alice.headers)).json()) == 2
        assert (await client.post(BASE, headers=bob.headers)).status_code == 200


async def _assert_429(response: httpx.Response) -> None:
    assert response.status_code == 429
    assert response.json()["code"] == "rate_limited"
    assert 1 <= int(response.headers["retry-after"]) <= 60


async def test_rate_limit_per_key(
    database_url: str, conn: AsyncConnection, alice: Caller, bob: Caller
) -> None:
    async with client_with(make_settings(database_url, rate_limit="3/minute")) as client:
        for _ in range(3):
            assert (await client.get(BASE, headers=alice.headers)).status_code == 200
        await _assert_429(await client.get(BASE, headers=alice.headers))
        await _assert_429(await client.post(BASE, headers=alice.headers))
        assert (await client.get(BASE, headers=bob.headers)).status_code == 200


async def test_wrong_keys_are_rate_limited_perclient_with(
    database_url: str, conn: AsyncConnection
) -> None:
    async with client_with(make_settings(database_url, rate_limit="5/minute")) as client:
        statuses = [
            (await client.get(BASE, headers={"Authorization": f"Bearer wrong{i}"})).status_code
            for i in range(12)
        ]
    assert statuses[:5] == [401] * 5
    assert 429 in statuses[5:]


async def test_wrong_keys_count_per_client_behind_the_proxy(
    database_url: str, conn: AsyncConnection
) -> None:
    """Every request comes from the proxy (the client_with default, 127.0.0.1); the
    client it forwards for is counted, whatever that client writes in the header."""

    def wrong_key(client: str, written: str = "") -> dict[str, str]:
        forwarded = f"{written}, {client}" if written else client
        # A new key each time: a key has its own count too.
        return {"Authorization": f"Bearer {secrets.token_hex(8)}", "X-Forwarded-For": forwarded}

    async with client_with(make_settings(database_url, rate_limit="3/minute")) as proxy:
        statuses = [
            (await proxy.get(BASE, headers=wrong_key("198.51.100.7", f"192.0.2.{n}"))).status_code
            for n in range(4)
        ]
        other = await proxy.get(BASE, headers=wrong_key("198.51.100.8"))
    assert statuses == [401, 401, 401, 429]
    assert other.status_code == 401


async def test_redis_shares_the_limit_between_processes(
    database_url: str, conn: AsyncConnection, alice: Caller
) -> None:
    settings = make_settings(database_url, rate_limit="4/minute", redis_url=REDIS)
    async with client_with(settings) as first, client_with(settings) as second:
        for client in (first, second, first, second):
            assert (await client.get(BASE, headers=alice.headers)).status_code == 200
        await _assert_429(await first.get(BASE, headers=alice.headers))
        await _assert_429(await second.get(BASE, headers=alice.headers))
