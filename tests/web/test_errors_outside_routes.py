"""Errors that no route answers (an unknown path, a method the path does not take, a body
over the limit, the database down): a page for a browser on the dashboard's side, the
exact JSON of the contract on the API's paths, whoever asks (http_shared/problems.py
``wants_page``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from maskmail.api.bodylimit import MESSAGE
from maskmail.app import create_app
from maskmail.store import addresses as store
from tests.api.conftest import BASE, client_for, make_settings
from tests.web.conftest import Db, SignIn

pytestmark = pytest.mark.anyio

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
HTMX = {"HX-Request": "true", "Accept": "*/*"}
# A database that is not there, for each backend: no server on the port; a directory
# where the file should be (SQLite cannot open it).
UNREACHABLE = {
    "postgres": "postgresql+asyncpg://postgres@127.0.0.1:9/none",
    "sqlite": "sqlite+aiosqlite:///{tmp}/maskmail.db",
}


def assert_page(answer: httpx.Response, status: int, message: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("text/html")
    assert answer.headers["content-security-policy"].startswith("default-src 'none'")
    assert "<title>Error · maskmail</title>" in answer.text
    assert f"<h1>{message}</h1>" in answer.text


def assert_json(answer: httpx.Response, status: int, body: Mapping[str, object]) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == body


@pytest.mark.parametrize("path", ["/no-such-page", "/addresses/1/nowhere", "/keys/x/y"])
async def test_an_unknown_dashboard_path_is_a_404_page(app: FastAPI, path: str) -> None:
    async with client_for(app) as client:
        answer = await client.get(path, headers=BROWSER)
    assert_page(answer, 404, "There is no such page.")


@pytest.mark.parametrize("path", ["/v3/relay/nowhere", "/api/v1/nowhere", "/v3"])
async def test_an_unknown_api_path_is_json_even_to_a_browser(app: FastAPI, path: str) -> None:
    async with client_for(app) as client:
        answer = await client.get(path, headers=BROWSER)
    assert_json(answer, 404, {"code": "not_found", "message": "Not Found", "details": {}})


async def test_a_script_asking_an_unknown_path_still_gets_json(app: FastAPI) -> None:
    async with client_for(app) as client:
        answer = await client.get("/no-such-page", headers={"Accept": "*/*"})
    assert_json(answer, 404, {"code": "not_found", "message": "Not Found", "details": {}})


async def test_htmx_gets_the_message_alone(app: FastAPI) -> None:
    async with client_for(app) as client:
        answer = await client.get("/no-such-page", headers=HTMX)
    assert answer.status_code == 404 and answer.text == "There is no such page."


@pytest.mark.parametrize(("method", "path", "allowed"), [("PUT", "/keys", "GET, HEAD, POST")])
async def test_a_method_a_dashboard_path_does_not_take_is_a_405_page(
    app: FastAPI, method: str, path: str, allowed: str
) -> None:
    async with client_for(app) as client:
        answer = await client.request(method, path, headers=BROWSER)
    assert_page(answer, 405, "Method Not Allowed.")
    assert answer.headers["allow"] == allowed


async def test_a_method_an_api_path_does_not_take_is_json(app: FastAPI) -> None:
    async with client_for(app) as client:
        answer = await client.put(BASE, headers=BROWSER)
    body = {"code": "method_not_allowed", "message": "Method Not Allowed", "details": {}}
    assert_json(answer, 405, body)
    assert answer.headers["allow"] == "GET, HEAD, POST"


async def test_an_oversized_dashboard_form_is_a_413_page_and_changes_nothing(
    sign_in: SignIn, db: Db
) -> None:
    ann = await sign_in("ann@example.com")
    body = {"csrf": await ann.csrf(), "description": "x" * 70_000}
    answer = await ann.client.post(
        "/addresses", data=body, headers={**BROWSER, "Origin": "http://testserver"}
    )
    assert_page(answer, 413, "The request body is too large.")
    assert answer.headers["connection"] == "close"
    assert await db.read(store.list_addresses, ann.user_id) == []


async def test_an_oversized_api_body_is_the_specs_json_even_to_a_browser(app: FastAPI) -> None:
    async with client_for(app) as client:
        answer = await client.post(
            BASE, headers={**BROWSER, "Authorization": "Bearer x"}, content=b"x" * 70_000
        )
    assert_json(answer, 413, {"code": "payload_too_large", "message": MESSAGE, "details": {}})


@pytest.mark.parametrize("backend", sorted(UNREACHABLE))
async def test_a_database_outage_is_a_page_on_the_dashboard_and_json_on_the_api(
    backend: str, tmp_path: Path
) -> None:
    (tmp_path / "maskmail.db").mkdir()
    app = create_app(make_settings(UNREACHABLE[backend].format(tmp=tmp_path)))
    async with app.router.lifespan_context(app), client_for(app) as client:
        page = await client.get("/keys", headers=BROWSER)
        api = await client.get(f"{BASE}/1", headers={**BROWSER, "Authorization": "Bearer x"})
    assert_page(page, 503, "The database is unavailable; try again shortly.")
    message = "the database is unavailable; try again shortly"
    assert_json(api, 503, {"code": "unavailable", "message": message, "details": {}})
    for answer in (page, api):
        assert answer.headers["retry-after"] == "5"
        assert str(tmp_path) not in answer.text and "127.0.0.1" not in answer.text
