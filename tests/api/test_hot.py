"""The hot routes' middleware: which requests it answers, and how it answers errors."""

from __future__ import annotations

import httpx
import orjson
import pytest
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from maskmail.api.hot import HotRoutes
from maskmail.api.proxy import route_path
from maskmail.core.errors import RateLimited, Unauthorized
from tests.api.conftest import Caller

pytestmark = pytest.mark.anyio
PATH = "/v3/relay/addresses"


class Recorder:
    """The app behind the middleware: answers 299 and remembers what reached it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.seen.append((scope["method"], scope["path"]))
        await PlainTextResponse("framework", status_code=299)(scope, receive, send)


async def listing(request: Request) -> Response:
    return Response(b"[]", media_type="application/json")


async def refusing(request: Request) -> Response:
    raise Unauthorized("no key")


async def limited(request: Request) -> Response:
    raise RateLimited("slow down", 7)


def client(inner: Recorder, root_path: str = "") -> httpx.AsyncClient:
    app = HotRoutes(inner, {("GET", PATH): listing, ("POST", PATH): refusing})
    transport = httpx.ASGITransport(app=app, root_path=root_path)
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


async def test_the_exact_method_and_path_is_answered_by_its_endpoint() -> None:
    inner = Recorder()
    async with client(inner) as http:
        response = await http.get(f"{PATH}?paging=1")
    assert (response.status_code, response.content) == (200, b"[]")
    assert inner.seen == []


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PUT", PATH),
        ("DELETE", PATH),
        ("GET", f"{PATH}/"),
        ("GET", f"{PATH}/1"),
        ("GET", "/v3/relay/addressesx"),
        ("GET", "/openapi.json"),
    ],
)
async def test_everything_else_goes_to_the_framework(method: str, path: str) -> None:
    inner = Recorder()
    async with client(inner) as http:
        response = await http.request(method, path)
    assert response.status_code == 299
    assert inner.seen == [(method, path)]


async def test_a_head_is_answered_as_its_get() -> None:
    """The list's HEAD by the list's endpoint, any other HEAD by the framework as a GET
    (api/head.py); the status and length are the GET's."""
    inner = Recorder()
    async with client(inner) as http:
        listed = await http.head(PATH)
        other = await http.head(f"{PATH}/1")
    assert (listed.status_code, listed.headers["content-length"]) == (200, "2")
    assert (other.status_code, other.headers["content-length"]) == (299, "9")
    assert inner.seen == [("GET", f"{PATH}/1")]


async def test_a_proxy_prefix_is_not_part_of_the_route() -> None:
    inner = Recorder()
    async with client(inner, root_path="/mm") as http:
        response = await http.get(f"/mm{PATH}")
    assert (response.status_code, inner.seen) == (200, [])


def test_route_path_strips_only_a_whole_prefix() -> None:
    assert route_path({"path": f"/mm{PATH}", "root_path": "/mm"}) == PATH
    assert route_path({"path": f"/mmx{PATH}", "root_path": "/mm"}) == f"/mmx{PATH}"
    assert route_path({"path": PATH, "root_path": ""}) == PATH
    assert route_path({"path": PATH, "root_path": "/mm"}) == PATH


async def test_errors_get_the_apis_error_body_and_headers() -> None:
    inner = Recorder()
    async with client(inner) as http:
        response = await http.post(PATH)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="maskmail"'
    assert orjson.loads(response.content) == {
        "code": "unauthorized",
        "message": "no key",
        "details": {},
    }
    app = HotRoutes(Recorder(), {("GET", PATH): limited})
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as http:
        response = await http.get(PATH)
    assert (response.status_code, response.headers["retry-after"]) == (429, "7")


async def test_the_real_app_still_applies_cors_and_the_body_limit_to_them(
    client: httpx.AsyncClient, alice: Caller
) -> None:
    origin = {**alice.headers, "Origin": "https://vault.example"}
    listed = await client.get(PATH, headers=origin)
    assert listed.status_code == 200
    assert listed.headers["access-control-allow-origin"] == "*"
    too_large = await client.post(PATH, headers=alice.headers, content=b"x" * 70_000)
    assert too_large.status_code == 413
    assert orjson.loads(too_large.content)["code"] == "payload_too_large"
