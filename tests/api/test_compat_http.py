"""What the compatibility routes need from HTTP: CORS, no redirects, prefixes, OpenAPI."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import ValidationError

from maskmail.config import Settings
from tests.api.conftest import BASE, DOMAIN, Caller, ClientFactory, client_for

pytestmark = pytest.mark.anyio

EXTENSION = "chrome-extension://nngceckbapebfimnlniiiahkandclblb"
CLIENT_HEADERS = (
    "authorization,authentication,content-type,accept,x-requested-with,x-requested-from"
)


def preflight(origin: str, method: str = "POST") -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": CLIENT_HEADERS,
    }


@pytest.mark.parametrize(
    "path", ["/api/v1/aliases", "/api//v1/aliases", "/api/alias/random/new", "/api/user_info"]
)
async def test_preflight_allows_the_clients_headers(client: httpx.AsyncClient, path: str) -> None:
    response = await client.options(path, headers=preflight(EXTENSION))
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "*"
    allowed = {
        h.strip().lower() for h in response.headers["access-control-allow-headers"].split(",")
    }
    assert set(CLIENT_HEADERS.split(",")) <= allowed
    assert "POST" in response.headers["access-control-allow-methods"]


async def test_configured_origins_only(reconfigured: ClientFactory, alice: Caller) -> None:
    vault = "https://vault.example.com"
    async with reconfigured(cors_origins=f"{vault}/, {EXTENSION}") as client:
        for origin in (vault, EXTENSION):
            ok = await client.options("/api/v1/aliases", headers=preflight(origin))
            assert ok.status_code == 200
            assert ok.headers["access-control-allow-origin"] == origin
        refused = await client.options("/api/v1/aliases", headers=preflight("https://evil.test"))
        assert refused.status_code == 400
        assert "access-control-allow-origin" not in refused.headers
        created = await client.post(
            "/api/v1/aliases", headers={**alice.headers, "Origin": vault}, json={}
        )
        assert created.status_code == 201
        assert created.headers["access-control-allow-origin"] == vault


async def test_errors_carry_cors_headers_too(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/alias/random/new", headers={"Origin": EXTENSION})
    assert response.status_code == 401
    assert response.headers["access-control-allow-origin"] == "*"


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("//api/v1/aliases", "bearer"),
        ("///api//v1/aliases", "bearer"),
        ("//api/alias/random/new?hostname=example.com", "raw"),
        ("//v3/relay/addresses", "bearer"),
    ],
)
@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
async def test_repeated_slashes_work_without_redirect(
    client: httpx.AsyncClient, alice: Caller, path: str, headers: str
) -> None:
    sent = alice.headers if headers == "bearer" else {"Authentication": alice.key}
    # A full URL: httpx would read a bare "//api/..." as a host name.
    response = await client.post(f"http://testserver{path}", headers=sent, follow_redirects=False)
    assert response.status_code in {200, 201}
    listed = (await client.get(BASE, headers=alice.headers)).json()
    assert len(listed) == 1


@pytest.mark.parametrize(
    ("method", "path", "headers", "status"),
    [
        ("POST", "/api/v1/aliases/", "bearer", 201),
        ("POST", "/api/alias/random/new/", "raw", 201),
        ("GET", "/api/v1/domain-options/", "bearer", 200),
        ("GET", "/api/user_info/", "raw", 200),
        ("POST", "/v3/relay/addresses/", "bearer", 200),
        ("GET", "/v3/relay/addresses/", "bearer", 200),
        ("GET", "/v3/relay/addresses/?paging=1", "bearer", 200),
    ],
)
async def test_one_trailing_slash_is_the_same_path_without_redirect(
    client: httpx.AsyncClient, alice: Caller, method: str, path: str, headers: str, status: int
) -> None:
    sent = alice.headers if headers == "bearer" else {"Authentication": alice.key}
    response = await client.request(method, path, headers=sent, follow_redirects=False)
    assert response.status_code == status, response.text
    made = (await client.post(BASE, headers=alice.headers)).json()
    one = await client.get(f"{BASE}/{made['id']}/", headers=alice.headers)
    assert one.json() == made
    bounces = await client.get(f"{BASE}/{made['id']}/bounces/", headers=alice.headers)
    assert bounces.status_code == 200


async def test_forwarded_prefix_from_a_trusted_proxy(
    client: httpx.AsyncClient, alice: Caller
) -> None:
    prefix = {"X-Forwarded-Prefix": "/relay/"}
    # A proxy that keeps the prefix in the path, and one that strips it.
    for path in ("/relay/api/v1/aliases", "/api/v1/aliases", "/relay//api/v1/aliases"):
        response = await client.post(path, headers={**alice.headers, **prefix}, json={})
        assert response.status_code == 201, path
    page = await client.get(
        "/relay/v3/relay/addresses?paging=1&size=1", headers={**alice.headers, **prefix}
    )
    assert (
        page.json()["next"] == "http://testserver/relay/v3/relay/addresses?paging=1&size=1&page=2"
    )


async def test_forwarded_prefix_from_an_untrusted_peer_is_ignored(
    app: FastAPI, alice: Caller
) -> None:
    async with client_for(app, peer=("192.0.2.7", 5000)) as stranger:
        response = await stranger.post(
            "/relay/api/v1/aliases",
            headers={**alice.headers, "X-Forwarded-Prefix": "/relay"},
            json={},
        )
    assert response.status_code == 404


async def test_root_path_setting(reconfigured: ClientFactory, alice: Caller) -> None:
    async with reconfigured(root_path="/mm/") as client:
        for path in ("/mm/api/v1/aliases", "/api/v1/aliases"):
            response = await client.post(path, headers=alice.headers, json={"domain": DOMAIN})
            assert response.status_code == 201, path
        page = await client.get(f"{BASE}?paging=1&size=1", headers=alice.headers)
        assert page.json()["next"].startswith("http://testserver/mm/v3/relay/addresses?")


def _operation(schema: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    operation: dict[str, Any] = schema["paths"][path][method]
    return operation


async def test_openapi_documents_both_contracts(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    addy = _operation(schema, "/api/v1/aliases", "post")
    assert addy["tags"] == ["compatibility: addy.io"]
    assert set(addy["responses"]) == {"201", "401", "403", "422", "429", "500", "503"}
    assert addy["responses"]["403"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/AddyError"
    }
    domain = schema["components"]["schemas"]["CreateAlias"]["properties"]["domain"]
    assert {"type": "string", "enum": [DOMAIN, ""]} in domain["anyOf"]
    sl = _operation(schema, "/api/alias/random/new", "post")
    assert sl["tags"] == ["compatibility: SimpleLogin"]
    assert set(sl["responses"]) == {"201", "401", "403", "422", "429", "500", "503"}
    assert sl["responses"]["429"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/SimpleLoginError"
    }
    assert sl["security"] == [{"simpleLoginKey": []}]
    assert {p["name"] for p in sl["parameters"]} == {"hostname", "mode"}
    assert schema["components"]["securitySchemes"]["simpleLoginKey"]["name"] == "Authentication"
    for path, method in (("/api/v1/domain-options", "get"), ("/api/user_info", "get")):
        assert {"200", "401", "429", "500"} <= set(_operation(schema, path, method)["responses"])
    spec = _operation(schema, BASE, "post")
    assert spec["responses"]["401"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"
    }


@pytest.mark.parametrize("value", ["relay", "/a b", "/a?b=1", "/a#x"])
def test_root_path_setting_must_be_a_plain_path(value: str) -> None:
    with pytest.raises(ValidationError, match="root_path"):
        Settings(root_path=value)


def test_cors_origins_setting_is_split_and_trimmed() -> None:
    settings = Settings(cors_origins=" https://a.example/ ,chrome-extension://x,, ")
    assert settings.cors_origin_list == ["https://a.example", "chrome-extension://x"]
    assert Settings().cors_origin_list == ["*"]
