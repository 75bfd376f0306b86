"""HEAD is answered wherever GET is (RFC 9110 9.3.2): the status and the headers the GET
would have, and no body. The paths are found from the app's routes, so that a GET route
added later is walked too: the dashboard's pages, the API's reads, the documents, the
probes and the files, signed in and signed out."""

from __future__ import annotations

import re

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from starlette.routing import Mount
from starlette.types import Message, Receive, Scope, Send

from maskmail.core import keys
from maskmail.services import admin
from maskmail.store import accounts
from maskmail.web import assets
from tests.api.conftest import client_for
from tests.web.conftest import Db, Person, SignIn

pytestmark = pytest.mark.anyio

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
# Documents that change with every request, so with every request their length: the
# metrics count each request. A HEAD's Content-Length there only has to be sent.
CHANGING = frozenset({"/metrics"})
_PARAM = re.compile(r"\{([^}:]+)(:[^}]*)?\}")
# Files served by the mounts, which no route template names.
FILES = (f"{assets.PATH}/{assets.LOGO}", "/docs/assets/swagger-ui.css", f"{assets.PATH}/nothing")


def get_paths(app: FastAPI) -> list[str]:
    """The template of every path some route answers by GET, from the app's routes."""
    found = {
        context.path_format
        for context in iter_route_contexts(app.routes)
        if not isinstance(context.original_route, Mount)
        and "GET" in (context.methods or ())
        and context.path_format
    }
    return sorted(found)


def _filled(template: str, ids: dict[str, str]) -> str:
    return _PARAM.sub(lambda m: ids.get(m.group(1), "7"), template)


def _cookies(answer: httpx.Response) -> list[str]:
    """The cookies an answer sets, by name and attributes: a new session's token differs
    from one request to the next, its name and flags do not."""
    return sorted(
        re.sub(r"=[^;]*", "=", value, count=1) for value in answer.headers.get_list("set-cookie")
    )


def _headers(answer: httpx.Response, length: bool) -> list[tuple[str, str]]:
    return sorted(
        (k, v if length or k != "content-length" else "")
        for k, v in answer.headers.multi_items()
        if k != "set-cookie"
    )


class Watched:
    """The app, with the body bytes it sends to each HEAD counted: the test client, as a
    server does, would drop them before a test could see them."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.head_bytes = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def sent(message: Message) -> None:
            if message["type"] == "http.response.body":
                self.head_bytes += len(message.get("body", b""))
            await send(message)

        await self.app(scope, receive, sent)

    def client(self, like: httpx.AsyncClient | None = None) -> httpx.AsyncClient:
        """A client of the watched app; ``like``'s cookies and headers, when given."""
        transport = httpx.ASGITransport(app=self, client=("127.0.0.1", 123))
        return httpx.AsyncClient(
            transport=transport,
            base_url="http://testserver",
            cookies=like.cookies if like else None,
            headers=like.headers if like else None,
        )


async def _same(
    client: httpx.AsyncClient, watched: Watched, path: str, headers: dict[str, str]
) -> str | None:
    """None when HEAD answers ``path`` as GET does, without a body; else what differs."""
    got = await client.get(path, headers=headers)
    before = watched.head_bytes
    answered = await client.head(path, headers=headers)
    if answered.status_code != got.status_code:
        return f"status {answered.status_code} for GET's {got.status_code}"
    if watched.head_bytes != before:
        return f"a body of {watched.head_bytes - before} bytes"
    length = path not in CHANGING
    if _headers(answered, length) != _headers(got, length):
        return f"headers {_headers(answered, length)} for GET's {_headers(got, length)}"
    if _cookies(answered) != _cookies(got):
        return f"cookies {_cookies(answered)} for GET's {_cookies(got)}"
    return None


async def _owner(sign_in: SignIn, db: Db) -> tuple[Person, dict[str, str]]:
    """A signed-in admin with an API key and an address, and the ids to fill paths with."""
    ann = await sign_in("ann@example.com")
    await db.write(admin.set_admin, ann.email, True)
    key = keys.generate_key()
    await db.write(accounts.add_key, ann.user_id, keys.hash_key(key))
    ann.client.headers["Authorization"] = f"Bearer {key}"
    made = await ann.client.post("/v3/relay/addresses")
    assert made.status_code == 200, made.text
    address = str(made.json()["id"])
    return ann, {"address": address, "address_id": address, "user_id": str(ann.user_id)}


async def test_every_get_path_answers_head_as_get(sign_in: SignIn, db: Db, app: FastAPI) -> None:
    templates = get_paths(app)
    assert {"/", "/addresses/{address}", "/v3/relay/addresses", "/docs", "/healthz"} <= set(
        templates
    )
    ann, ids = await _owner(sign_in, db)
    paths = [_filled(t, ids) for t in templates] + list(FILES)
    wrong = {}
    watched = Watched(app)
    async with watched.client(ann.client) as signed_in, watched.client() as anyone:
        for who, client in (("ann", signed_in), ("anyone", anyone)):
            for accept in (BROWSER, {"Accept": "application/json"}):
                for path in paths:
                    differs = await _same(client, watched, path, accept)
                    if differs:
                        wrong[f"{who} {accept['Accept'][:9]} {path}"] = differs
    assert wrong == {}, "\n".join(f"{k}: {v}" for k, v in wrong.items())


async def test_a_head_to_a_page_is_no_405(sign_in: SignIn) -> None:
    ann = await sign_in("ann@example.com")
    answer = await ann.client.head("/mailboxes", headers=BROWSER)
    assert answer.status_code == 200
    assert int(answer.headers["content-length"]) > 0
    assert "content-security-policy" in answer.headers


async def test_a_signed_out_head_is_sent_to_sign_in(app: FastAPI) -> None:
    async with client_for(app) as anyone:
        answer = await anyone.head("/mailboxes", headers=BROWSER)
    assert (answer.status_code, answer.headers["location"]) == (303, "/")
