"""Strings no database can keep (NUL, lone surrogates) are a 422 on every route, never a 500."""

from __future__ import annotations

import httpx
import pytest

from maskmail.core.text import unstorable
from tests.api.conftest import BASE, Caller

pytestmark = pytest.mark.anyio

# As JSON escapes: the text a client sends, which the JSON parser turns into the character.
UNSTORABLE = [r"x\u0000y", r"x\ud800y", r"\udfff"]


def test_the_rule() -> None:
    assert unstorable("café ✓ 😀") is None
    assert unstorable("a\x00b") is not None
    assert unstorable("\ud800") is not None


async def _body(
    client: httpx.AsyncClient, method: str, path: str, caller: Caller, raw: str
) -> httpx.Response:
    return await client.request(
        method,
        path,
        headers={
            **caller.headers,
            "Authentication": caller.key,
            "Content-Type": "application/json",
        },
        content=raw.encode("ascii"),
    )


@pytest.mark.parametrize("text", UNSTORABLE)
@pytest.mark.parametrize(
    ("method", "route", "template", "field"),
    [
        ("PATCH", "one", '{"description": "%s"}', "description"),
        ("PUT", "one", '{"description": "%s"}', "description"),
        ("POST", "contacts", '{"email": "a%s@example.com"}', "email"),
        ("POST", "/api/v1/aliases", '{"description": "%s"}', "description"),
        ("POST", "/api/v1/aliases", '{"domain": "%s"}', "domain"),
        ("POST", "/api/alias/random/new", '{"note": "%s"}', "note"),
    ],
)
async def test_unstorable_text_is_a_422_and_changes_nothing(
    client: httpx.AsyncClient,
    alice: Caller,
    text: str,
    method: str,
    route: str,
    template: str,
    field: str,
) -> None:
    made = (await client.post(BASE, headers=alice.headers)).json()
    path = {"one": f"{BASE}/{made['id']}", "contacts": f"{BASE}/{made['id']}/contacts"}.get(
        route, route
    )
    response = await _body(client, method, path, alice, template % text)
    assert response.status_code == 422, response.text
    assert field in response.text
    listed = (await client.get(BASE, headers=alice.headers)).json()
    assert [a["id"] for a in listed] == [made["id"]]
    assert listed[0]["description"] == ""


async def test_an_unstorable_hostname_is_a_422(client: httpx.AsyncClient, alice: Caller) -> None:
    response = await client.post(
        "/api/alias/random/new?hostname=a%00b", headers={"Authentication": alice.key}
    )
    assert response.status_code == 422
    assert (await client.get(BASE, headers=alice.headers)).json() == []
