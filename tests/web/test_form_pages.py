"""A GET (a reload, the back button, a copied URL) to an address only a form posts to is
sent to the page that holds the form (web/form_pages.py), signed in or not, never
answered 405; the API's paths keep the 405 of their contract."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI

from maskmail.http_shared.problems import API_PREFIXES
from maskmail.web import form_pages
from tests.api.conftest import client_for
from tests.web.conftest import SignIn

pytestmark = pytest.mark.anyio

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
_PARAM = re.compile(r"\{[^}]+\}")


async def test_a_reload_of_the_new_address_form_goes_back_to_the_addresses(
    sign_in: SignIn, app: FastAPI
) -> None:
    ann = await sign_in("ann@example.com")
    for method in ("GET", "HEAD"):
        answer = await ann.client.request(method, "/addresses", headers=BROWSER)
        assert answer.status_code == 303, answer.text
        assert answer.headers["location"] == "/"
    assert (await ann.client.get("/addresses", follow_redirects=True)).status_code == 200
    # Signed out: the same 303, and then the home page's sign-in form.
    async with client_for(app) as anyone:
        answer = await anyone.get("/addresses", headers=BROWSER)
        assert (answer.status_code, answer.headers["location"]) == (303, "/")
        shown = await anyone.get("/addresses", headers=BROWSER, follow_redirects=True)
    assert shown.status_code == 200 and 'action="/sign-in"' in shown.text


async def test_a_form_page_keeps_the_ids_of_the_path(sign_in: SignIn) -> None:
    ann = await sign_in("ann@example.com")
    answer = await ann.client.get("/addresses/12/contacts", headers=BROWSER)
    assert (answer.status_code, answer.headers["location"]) == (303, "/addresses/12")
    answer = await ann.client.get("/keys/x%20y/revoke", headers=BROWSER)
    assert (answer.status_code, answer.headers["location"]) == (303, "/keys")


def _dashboard_post_only(app: FastAPI) -> list[str]:
    """Every path of the app that takes a POST and that no page shows by GET, outside the
    API's paths: found from the routes, so that a route added later is walked too."""
    found = form_pages.post_only(form_pages.routes_of(app.router))
    return [p for p in found if not p.startswith(API_PREFIXES)]


def _pages(app: FastAPI) -> list[re.Pattern[str]]:
    """A pattern of each path that a page answers by GET."""
    return [
        re.compile("/".join("[^/]+" if _PARAM.fullmatch(s) else re.escape(s) for s in p.split("/")))
        for p in form_pages.pages(form_pages.routes_of(app.router))
    ]


async def test_every_post_only_dashboard_path_sends_a_get_to_a_page(
    sign_in: SignIn, app: FastAPI
) -> None:
    paths = _dashboard_post_only(app)
    assert "/addresses" in paths and "/sign-out" in paths and len(paths) > 20
    pages = _pages(app)
    ann = await sign_in("ann@example.com")
    async with client_for(app) as anyone:
        for template in paths:
            path = _PARAM.sub("7", template)
            for client in (ann.client, anyone):
                for method in ("GET", "HEAD"):
                    answer = await client.request(method, path, headers=BROWSER)
                    assert answer.status_code == 303, (method, path, answer.status_code)
                    to = answer.headers["location"]
                    # A page of the dashboard, and one above the form's own address.
                    assert any(p.fullmatch(to) for p in pages), (path, to)
                    assert to == "/" or path.startswith(to + "/"), (path, to)
    # A page the person may see (or the sign-in one): not a 405.
    assert (await ann.client.get("/sign-in", follow_redirects=True)).status_code == 200


async def test_posting_still_needs_the_form_token(sign_in: SignIn) -> None:
    ann = await sign_in("ann@example.com")
    answer = await ann.client.post(
        "/addresses", data={"description": "x"}, headers={"Origin": "http://testserver"}
    )
    assert answer.status_code == 403


async def test_the_api_keeps_its_405(app: FastAPI) -> None:
    found = form_pages.post_only(form_pages.routes_of(app.router))
    spec = [p for p in found if p.startswith("/v3/")]
    assert spec
    async with client_for(app) as client:
        for template in spec:
            answer = await client.get(_PARAM.sub("7", template), headers=BROWSER)
            assert answer.status_code == 405, template
            assert answer.headers["content-type"] == "application/json"
