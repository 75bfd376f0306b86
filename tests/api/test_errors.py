"""The error body everywhere, and no internals on unexpected failures."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Receive, Scope, Send

from maskmail.api.bodylimit import BodyTooLarge
from maskmail.app import create_app
from maskmail.core.errors import RateLimited, StoreUnavailable, Unauthorized
from maskmail.http_shared.connection import get_conn
from maskmail.http_shared.problems import problem
from maskmail.runner import uvicorn_options
from tests.api.conftest import BASE, Caller, make_settings

pytestmark = pytest.mark.anyio


async def test_unexpected_failure_is_a_bare_json_500(
    client: httpx.AsyncClient, alice: Caller, app: FastAPI
) -> None:
    async def broken() -> AsyncIterator[AsyncConnection]:
        raise RuntimeError("secret internals: password=hunter2")
        yield  # pragma: no cover

    app.dependency_overrides[get_conn] = broken
    app.state.drivers = asynccontextmanager(broken)  # the list route's driver access
    response = await client.get(BASE, headers=alice.headers)
    assert response.status_code == 500
    assert response.json() == {
        "code": "internal_error",
        "message": "internal error; it has been logged",
        "details": {},
    }
    assert "hunter2" not in response.text and "Traceback" not in response.text


@asynccontextmanager
async def served(app: FastAPI) -> AsyncIterator[str]:
    """``app`` behind a real uvicorn, with the options ``maskmail serve`` uses; its URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, **uvicorn_options(access_log=False)))  # type: ignore[arg-type]
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            assert not task.done(), "uvicorn did not start"
            await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
        sock.close()


async def test_a_500_leaves_the_connection_usable_and_is_logged_once(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """uvicorn closes a keep-alive connection when the app raises after answering, and a
    client's next request on it was reset; the 500 is answered without raising."""
    app = create_app(make_settings(database_url))

    @app.post("/v3/relay/broken")
    async def broken() -> None:
        raise RuntimeError("secret internals: password=hunter2")

    ports: list[int] = []
    async with (
        served(app) as url,
        httpx.AsyncClient(base_url=url, limits=httpx.Limits(max_connections=1)) as client,
    ):
        answers = []
        for method, path in (("POST", "/v3/relay/broken"), ("GET", "/healthz")) * 2:
            async with client.stream(method, path, json={"a": 1}) as answer:
                ports.append(answer.extensions["network_stream"].get_extra_info("client_addr")[1])
                await answer.aread()
                answers.append(answer)
    assert [a.status_code for a in answers] == [500, 200, 500, 200]
    assert answers[0].json() == {
        "code": "internal_error",
        "message": "internal error; it has been logged",
        "details": {},
    }
    assert len(set(ports)) == 1, "each request came on a new connection"
    logged = [r for r in caplog.records if r.exc_info is not None]
    assert [r.getMessage() for r in logged] == ["unexpected error on POST /v3/relay/broken"] * 2


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


@pytest.mark.parametrize(
    ("exc", "status", "code", "headers"),
    [
        (Unauthorized("no key"), 401, "unauthorized", {"WWW-Authenticate"}),
        (RateLimited("slow", 7), 429, "rate_limited", {"Retry-After"}),
        (StoreUnavailable("down"), 503, "unavailable", {"Retry-After"}),
        (BodyTooLarge(), 413, "payload_too_large", set()),
        (StarletteHTTPException(400, "bad bytes"), 422, "validation_error", set()),
        (StarletteHTTPException(405, "no", {"Allow": "GET"}), 405, "method_not_allowed", {"Allow"}),
        (RuntimeError("password=hunter2"), 500, "internal_error", set()),
    ],
)
def test_one_mapping_for_every_exception(
    exc: Exception, status: int, code: str, headers: set[str]
) -> None:
    found = problem(exc)
    assert (found.status, found.code, set(found.headers)) == (status, code, headers)
    assert "hunter2" not in found.message


async def test_an_oversized_body_read_by_a_compat_route_is_413_in_its_shape(
    client: httpx.AsyncClient, alice: Caller
) -> None:
    # A body of unknown length that is not chunked (an ASGI server may pass one on)
    # passes the limit only while the route reads it.
    async def sized_by_nobody(scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(k, v) for k, v in scope["headers"] if k != b"transfer-encoding"]
        await app_under_test(dict(scope, headers=headers), receive, send)

    app_under_test = client._transport.app  # type: ignore[attr-defined]
    client._transport.app = sized_by_nobody  # type: ignore[attr-defined]

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(20):
            yield b"x" * 8192

    headers = {"Authentication": alice.key, "Content-Type": "application/json"}
    response = await client.post("/api/alias/random/new", headers=headers, content=chunks())
    assert response.status_code == 413
    assert response.json() == {"error": "the request body is too large"}


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", BASE, "GET, HEAD, POST"),
        ("POST", f"{BASE}/1", "DELETE, GET, HEAD, PATCH, PUT"),
        ("GET", f"{BASE}/1/contacts", "POST"),
        ("DELETE", "/api/v1/aliases", "POST"),
    ],
)
@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
async def test_405_allows_every_method_of_the_path(
    client: httpx.AsyncClient, alice: Caller, method: str, path: str, allowed: str
) -> None:
    response = await client.request(method, path, headers=alice.headers)
    assert response.status_code == 405
    assert response.headers["Allow"] == allowed
