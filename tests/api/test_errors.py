"""The error body everywhere, and no internals on unexpected failures."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.api.app import create_app
from maskmail.api.deps import get_conn
from tests.api.conftest import BASE, Caller, make_settings

pytestmark = pytest.mark.anyio


async def test_unexpected_failure_is_a_bare_json_500(
    client: httpx.AsyncClient, alice: Caller, app: FastAPI
) -> None:
    async def broken() -> AsyncIterator[AsyncConnection]:
        raise RuntimeError("secret internals: password=hunter2")
        yield  # pragma: no cover

    app.dependency_overrides[get_conn] = broken
    app.state.raw = asynccontextmanager(broken)  # the list route's driver access
    response = await client.get(BASE, headers=alice.headers)
    assert response.status_code == 500
    assert response.json() == {
        "code": "internal_error",
        "message": "internal error; it has been logged",
        "details": {},
    }
    assert "hunter2" not in response.text and "Traceback" not in response.text


async def test_database_outage_is_503_unavailable() -> None:
    settings = make_settings("postgresql+asyncpg://postgres@127.0.0.1:9/none")
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            response = await client.get(BASE, headers={"Authorization": "Bearer mm_live_x"})
    assert response.status_code == 503
    assert response.json()["code"] == "unavailable"
    assert "Retry-After" in response.headers


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/nowhere", 404, "not_found"),
        ("GET", "/v3/relay/addresses/", 404, "not_found"),
        ("PUT", BASE, 405, "method_not_allowed"),
        ("DELETE", BASE, 405, "method_not_allowed"),
        ("POST", f"{BASE}/1", 405, "method_not_allowed"),
    ],
)
async def test_routing_errors_use_the_error_body(
    client: httpx.AsyncClient, alice: Caller, method: str, path: str, status: int, code: str
) -> None:
    response = await client.request(method, path, headers=alice.headers)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["code"] == code and set(body) == {"code", "message", "details"}
