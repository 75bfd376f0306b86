"""Strings no database can keep (NUL, lone surrogates) are a 422 on every route, never a 500."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

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
@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
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


def _strings(schema: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """The string properties of a request body's schema, its references followed."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return _strings(spec["components"]["schemas"][name], spec)
    found = [n for v in schema.get("anyOf", []) for n in _strings(v, spec)]
    for name, prop in schema.get("properties", {}).items():
        kinds = [prop.get("type"), *(v.get("type") for v in prop.get("anyOf", []))]
        if "string" in kinds:
            found.append(name)
    return found


def _every_string_input(app: FastAPI) -> list[tuple[str, str, str, str]]:
    """(method, path, where, name) for every string a route of the OpenAPI takes."""
    spec = app.openapi()
    inputs = []
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for param in operation.get("parameters", []):
                if param["in"] == "query" and param.get("schema", {}).get("type") != "integer":
                    inputs.append((method.upper(), path, "query", param["name"]))
            content = operation.get("requestBody", {}).get("content", {})
            for media in content.values():
                for name in _strings(media["schema"], spec):
                    inputs.append((method.upper(), path, "body", name))
    return inputs


async def test_every_string_every_route_takes_is_checked(
    app: FastAPI, client: httpx.AsyncClient, alice: Caller
) -> None:
    """Walks the OpenAPI document, so a route or field added later is covered too."""
    made = (await client.post(BASE, headers=alice.headers)).json()
    inputs = _every_string_input(app)
    # The document is read, not guessed: the routes of every router are in it.
    assert {path for _, path, _, _ in inputs} >= {
        f"{BASE}/{{address_id}}",
        "/v3/relay/mailboxes",
        "/v3/relay/subdomains",
        "/api/v1/aliases",
        "/api/alias/random/new",
    }
    answers = {}
    for method, path, where, name in inputs:
        url = re.sub(r"\{[a-z_]+\}", str(made["id"]), path)
        for text in UNSTORABLE:
            if where == "query":
                if "\\u0000" not in text:
                    continue  # a query string is bytes: percent-decoding makes no surrogate
                url_with = f"{url}?{name}=a%00b"
                response = await client.request(method, url_with, headers=alice.headers)
            else:
                raw = f'{{"{name}": "{text}"}}'
                response = await _body(client, method, url, alice, raw)
            answers[(method, path, where, name, text)] = response.status_code
    # A body's string is refused as unstorable; a query parameter is never stored, and
    # may be read leniently (a page number), but is never a server error.
    wrong = {k: v for k, v in answers.items() if (v != 422 if k[2] == "body" else v >= 500)}
    assert answers and not wrong, wrong
    listed = (await client.get(BASE, headers=alice.headers)).json()
    assert [(a["id"], a["description"]) for a in listed] == [(made["id"], "")]
