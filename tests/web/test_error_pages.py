"""Every error on a dashboard route is a page in the dashboard's layout, with the status
and the Retry-After of the one mapping, and nothing of the server's internals."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.app import create_app
from maskmail.core.errors import AddressTaken, LimitReached, StoreUnavailable
from maskmail.http_shared.connection import get_conn
from maskmail.store import addresses as store
from maskmail.web.error_pages import PageRoute
from maskmail.web.form_pages import routes_of
from maskmail.web.pages.admin import AdminRoute
from maskmail.web.router import router as dashboard
from tests.api.conftest import client_for, make_settings
from tests.web.conftest import Db, SignIn

pytestmark = pytest.mark.anyio


def assert_page(answer: httpx.Response, status: int, message: str) -> None:
    assert answer.status_code == status
    assert answer.headers["content-type"].startswith("text/html")
    assert answer.headers["x-frame-options"] == "DENY"
    assert "<title>Error · maskmail</title>" in answer.text
    assert f"<h1>{message}</h1>" in answer.text


async def test_a_page_during_a_database_outage_is_a_503_page() -> None:
    app = create_app(make_settings("postgresql+asyncpg://postgres@127.0.0.1:9/none"))
    async with app.router.lifespan_context(app), client_for(app) as client:
        shown = await client.get("/")
        posted = await client.post("/sign-in", data={"email": "a@example.com", "password": "x"})
    for answer in (shown, posted):
        assert_page(answer, 503, "The database is unavailable; try again shortly.")
        assert answer.headers["retry-after"] == "5"
        assert "127.0.0.1" not in answer.text and "asyncpg" not in answer.text


def _failing(exc: Exception) -> Callable[[], AsyncIterator[AsyncConnection]]:
    async def conn() -> AsyncIterator[AsyncConnection]:
        raise exc
        yield  # pragma: no cover

    return conn


@pytest.mark.parametrize(
    ("exc", "status", "message"),
    [
        (AddressTaken("could not make a reverse alias; try again"), 503, "Could not make"),
        (LimitReached("address limit reached (3)"), 403, "Address limit reached (3)."),
        (StoreUnavailable("database unavailable"), 503, "Database unavailable."),
    ],
)
@pytest.mark.parametrize("path", ["/", "/keys", "/mailboxes", "/addresses/1", "/activity"])
async def test_an_error_a_page_raises_is_a_page_with_the_mappings_status(
    sign_in: SignIn, app: FastAPI, path: str, exc: Exception, status: int, message: str
) -> None:
    ann = await sign_in("ann@example.com")
    app.dependency_overrides[get_conn] = _failing(exc)
    answer = await ann.client.get(path)
    assert answer.status_code == status
    assert answer.headers["content-type"].startswith("text/html")
    assert message in answer.text and "<title>Error · maskmail</title>" in answer.text
    assert ("retry-after" in answer.headers) is isinstance(exc, StoreUnavailable)


async def test_an_unexpected_failure_is_a_500_page_without_internals(
    sign_in: SignIn, app: FastAPI, caplog: pytest.LogCaptureFixture
) -> None:
    ann = await sign_in("bea@example.com")
    token = await ann.csrf()
    app.dependency_overrides[get_conn] = _failing(RuntimeError("secret: password=hunter2"))
    origin = {"Origin": "http://testserver"}
    answer = await ann.client.post("/addresses", data={"csrf": token}, headers=origin)
    assert_page(answer, 500, "Internal error; it has been logged.")
    assert "hunter2" not in answer.text and "Traceback" not in answer.text
    logged = [r.getMessage() for r in caplog.records if r.exc_info is not None]
    assert logged == ["unexpected error on POST /addresses"]


async def test_htmx_is_answered_the_message_alone(sign_in: SignIn, app: FastAPI) -> None:
    ann = await sign_in("dan@example.com")
    app.dependency_overrides[get_conn] = _failing(StoreUnavailable("database unavailable"))
    answer = await ann.client.get("/activity", headers={"HX-Request": "true"})
    assert answer.status_code == 503 and answer.headers["retry-after"] == "5"
    assert answer.text == "Database unavailable."


async def test_a_failure_inside_a_change_keeps_nothing_and_is_a_page(
    sign_in: SignIn, db: Db, monkeypatch: pytest.MonkeyPatch
) -> None:
    ann = await sign_in("cat@example.com")
    delete = store.delete_address

    async def deleted_then_failed(conn: AsyncConnection, user_id: int, wanted: int) -> None:
        await delete(conn, user_id, wanted)
        raise AddressTaken("no free address; try again")

    await ann.post("/addresses")
    (made,) = await db.read(store.list_addresses, ann.user_id)
    monkeypatch.setattr(store, "delete_address", deleted_then_failed)
    answer = await ann.post(f"/addresses/{made.id}/delete")
    assert_page(answer, 503, "No free address; try again.")
    assert [a.id for a in await db.read(store.list_addresses, ann.user_id)] == [made.id]


async def test_the_api_still_answers_json_for_the_same_error(app: FastAPI) -> None:
    app.dependency_overrides[get_conn] = _failing(LimitReached("address limit reached (3)"))
    async with client_for(app) as client:
        answer = await client.get("/v3/relay/addresses/1", headers={"Authorization": "Bearer x"})
    assert answer.status_code == 403
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["code"] == "address_limit_reached"


def test_every_dashboard_route_answers_errors_as_pages() -> None:
    routes = routes_of(dashboard)
    assert len(routes) > 30
    # The admin pages answer as pages too, but to anyone not an admin as an unknown path.
    assert [r for r in routes if not isinstance(r, PageRoute | AdminRoute)] == []
