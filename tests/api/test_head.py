"""HEAD as its GET (api/head.py): no body from the app itself, whatever the server or the
test client would drop; the same key check and rate limit; the metrics see a HEAD; the
mail plane's probes too. tests/web/test_head.py walks every GET path."""

from __future__ import annotations

import anyio
import httpx
import pytest
from fastapi import FastAPI
from prometheus_client import REGISTRY
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from maskmail.api.head import HEAD, as_get
from maskmail.api.health import health_app
from maskmail.config import Settings
from maskmail.readiness import Readiness
from tests.api.conftest import BASE, Caller, ClientFactory, UserFactory

pytestmark = pytest.mark.anyio


def _scope(path: str, headers: dict[str, str], query: bytes = b"") -> Scope:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": HEAD,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query,
        "headers": [(b"host", b"testserver")]
        + [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 123),
        "server": ("testserver", 80),
        "state": {},
    }


def _requests() -> Receive:
    """The request's (empty) body, and then a client that waits for the answer."""
    messages = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive() -> Message:
        if not messages:
            await anyio.sleep_forever()
        return messages.pop()

    return receive


async def _sent(
    app: ASGIApp, path: str, headers: dict[str, str], query: bytes = b""
) -> list[Message]:
    """What the app itself sends for a HEAD, before any server drops a body."""
    messages: list[Message] = []

    async def send(message: Message) -> None:
        messages.append(message)

    await app(_scope(path, headers, query), _requests(), send)
    return messages


@pytest.mark.parametrize(
    ("path", "query"),
    [(BASE, b""), (BASE, b"paging=1"), ("/docs", b""), ("/healthz", b""), ("/favicon.ico", b"")],
)
async def test_the_app_sends_no_body_for_a_head(
    app: FastAPI, alice: Caller, path: str, query: bytes
) -> None:
    start, *rest = await _sent(app, path, alice.headers, query)
    assert start["type"] == "http.response.start" and start["status"] == 200
    length = dict(start["headers"]).get(b"content-length")
    assert length is not None and int(length) > 0
    assert rest and all(m["body"] == b"" for m in rest), rest


async def test_as_get_routes_a_get_and_gives_back_a_head() -> None:
    seen: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope["method"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        seen.append(scope["method"])
        await send({"type": "http.response.body", "body": b"part", "more_body": True})
        await send({"type": "http.response.body", "body": b"rest"})

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append({**message, "method": scope["method"]})

    scope = _scope("/x", {})
    await as_get(app, scope, _requests(), send)
    assert seen == ["GET", "HEAD"] and scope["method"] == "HEAD"
    assert [m.get("body") for m in sent] == [None, b"", b""]
    assert [m.get("more_body") for m in sent] == [None, True, False]
    assert {m["method"] for m in sent} == {"HEAD"}


async def test_as_get_gives_back_a_head_when_the_app_fails() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("no answer")

    async def send(message: Message) -> None:
        raise AssertionError(message)

    scope = _scope("/x", {})
    with pytest.raises(RuntimeError):
        await as_get(app, scope, _requests(), send)
    assert scope["method"] == "HEAD"


async def test_a_head_needs_the_key_and_counts_against_its_limit(
    reconfigured: ClientFactory, make_user: UserFactory
) -> None:
    carol = await make_user("carol@example.com")
    async with reconfigured(rate_limit="2/minute") as client:
        refused = await client.head(BASE)
        assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith(
            "Bearer"
        )
        for _ in range(2):
            assert (await client.head(BASE, headers=carol.headers)).status_code == 200
        # The two HEADs used the key's allowance: its GET waits as its HEAD does.
        for method in ("GET", "HEAD"):
            limited = await client.request(method, BASE, headers=carol.headers)
            assert limited.status_code == 429 and "retry-after" in limited.headers


def _seen(method: str, route: str) -> float:
    labels = {"method": method, "route": route, "status": "200"}
    return REGISTRY.get_sample_value("maskmail_http_request_duration_seconds_count", labels) or 0.0


async def test_the_metrics_see_a_head(client: httpx.AsyncClient, alice: Caller) -> None:
    one = f"{BASE}/{{address_id}}"
    made = await client.post(BASE, headers=alice.headers)
    before = (_seen("HEAD", BASE), _seen("HEAD", one), _seen("GET", BASE))
    assert (await client.head(BASE, headers=alice.headers)).status_code == 200
    read = await client.head(f"{BASE}/{made.json()['id']}", headers=alice.headers)
    assert read.status_code == 200
    after = (_seen("HEAD", BASE), _seen("HEAD", one), _seen("GET", BASE))
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 1, 0]


async def test_a_head_changes_nothing(client: httpx.AsyncClient, alice: Caller) -> None:
    for _ in range(3):
        assert (await client.head(BASE, headers=alice.headers)).status_code == 200
    assert (await client.get(BASE, headers=alice.headers)).json() == []


async def test_a_preflight_for_head_is_allowed(reconfigured: ClientFactory) -> None:
    origin = "https://vault.example"
    async with reconfigured(cors_origins=origin) as client:
        answer = await client.options(
            BASE,
            headers={
                "Origin": origin,
                "Access-Control-Request-Method": "HEAD",
                "Access-Control-Request-Headers": "authorization",
            },
        )
    assert answer.status_code == 200
    assert "HEAD" in answer.headers["access-control-allow-methods"]


async def test_the_mail_planes_probes_answer_head(clean: AsyncEngine, settings: Settings) -> None:
    probes = health_app(Readiness.of(clean), settings)
    messages = await _sent(probes, "/healthz", {})
    start, *rest = messages
    assert start["status"] == 200 and dict(start["headers"])[b"content-length"] == b"15"
    assert all(m["body"] == b"" for m in rest)
