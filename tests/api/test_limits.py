"""The address limit and the per-key rate limit, in memory and shared through Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.api.app import create_app
from maskmail.api.deps import get_conn
from maskmail.config import Settings
from tests.api.conftest import BASE, Caller, make_settings

pytestmark = pytest.mark.anyio
REDIS = "redis://127.0.0.1:6379/0"


@asynccontextmanager
async def _client(settings: Settings, conn: AsyncConnection) -> AsyncIterator[httpx.AsyncClient]:
    app: FastAPI = create_app(settings)

    async def test_conn() -> AsyncIterator[AsyncConnection]:
        async with conn.begin_nested():
            yield conn

    app.dependency_overrides[get_conn] = test_conn
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            yield c


async def test_address_limit_is_403(
    database_url: str, conn: AsyncConnection, alice: Caller, bob: Caller
) -> None:
    async with _client(make_settings(database_url, max_addresses_per_user=2), conn) as client:
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
    async with _client(make_settings(database_url, rate_limit="3/minute"), conn) as client:
        for _ in range(3):
            assert (await client.get(BASE, headers=alice.headers)).status_code == 200
        await _assert_429(await client.get(BASE, headers=alice.headers))
        await _assert_429(await client.post(BASE, headers=alice.headers))
        assert (await client.get(BASE, headers=bob.headers)).status_code == 200


async def test_wrong_keys_are_rate_limited_per_client(
    database_url: str, conn: AsyncConnection
) -> None:
    async with _client(make_settings(database_url, rate_limit="5/minute"), conn) as client:
        statuses = [
            (await client.get(BASE, headers={"Authorization": f"Bearer wrong{i}"})).status_code
            for i in range(12)
        ]
    assert statuses[:5] == [401] * 5
    assert 429 in statuses[5:]


async def test_redis_shares_the_limit_between_processes(
    database_url: str, conn: AsyncConnection, alice: Caller
) -> None:
    settings = make_settings(database_url, rate_limit="4/minute", redis_url=REDIS)
    async with _client(settings, conn) as first, _client(settings, conn) as second:
        for client in (first, second, first, second):
            assert (await client.get(BASE, headers=alice.headers)).status_code == 200
        await _assert_429(await first.get(BASE, headers=alice.headers))
        await _assert_429(await second.get(BASE, headers=alice.headers))
