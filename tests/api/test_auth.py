"""Authentication and ownership: every 401 case, and users never see each other."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.keys import hash_key
from maskmail.store import accounts
from tests.api.conftest import BASE, Caller

pytestmark = pytest.mark.anyio


def _assert_401(response: httpx.Response) -> None:
    assert response.status_code == 401
    assert response.headers["www-authenticate"].lower().startswith("bearer")
    body = response.json()
    assert body["code"] == "unauthorized"
    assert set(body) == {"code", "message", "details"}
    _assert_speaks_to_the_person(body["message"])


def _assert_speaks_to_the_person(message: str, keys_page: str = "http://testserver/keys") -> None:
    """The person at the client learns where to get a key, not an operator's command."""
    assert f"API keys page, {keys_page}" in message
    assert "maskmail " not in message


@pytest.mark.parametrize(
    ("path", "header", "field"),
    [
        ("/api/user_info", "Authentication", "error"),
        ("/api/v1/domain-options", "Authorization", "message"),
    ],
)
@pytest.mark.parametrize("value", [None, "Bearer mm_live_unknownkeyvalue"])
async def test_the_compatibility_401s_say_where_to_get_a_key(
    client: httpx.AsyncClient, path: str, header: str, field: str, value: str | None
) -> None:
    response = await client.get(path, headers={} if value is None else {header: value})
    assert response.status_code == 401
    _assert_speaks_to_the_person(response.json()[field])


async def test_the_keys_page_named_in_a_401_is_the_one_the_browser_reaches(
    client: httpx.AsyncClient,
) -> None:
    """Through a trusted proxy under a prefix, the page is the public one."""
    forwarded = {
        "X-Forwarded-Proto": "https",
        "X-Forwarded-Host": "mask.example.com",
        "X-Forwarded-Prefix": "/maskmail",
    }
    response = await client.get(BASE, headers=forwarded)
    assert response.status_code == 401
    message = response.json()["message"]
    _assert_speaks_to_the_person(message, "https://mask.example.com/maskmail/keys")


@pytest.mark.parametrize(
    "header",
    [None, "Basic YWxpY2U6c2VjcmV0", "Bearer", "Bearer ", "Bearer    ", "Token abc",
     "Bearer mm_live_unknownkeyvalue", "Bearer a b"],
    ids=["none", "basic", "bearer-no-token", "bearer-space", "bearer-blank", "token-scheme",
         "unknown-key", "two-tokens"],
)  # fmt: skip
@pytest.mark.parametrize(("method", "path"), [("GET", BASE), ("POST", BASE), ("GET", f"{BASE}/1")])
async def test_unusable_credentials_get_401(
    client: httpx.AsyncClient, alice: Caller, header: str | None, method: str, path: str
) -> None:
    headers = {} if header is None else {"Authorization": header}
    _assert_401(await client.request(method, path, headers=headers))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("path", "header"), [(BASE, "Authorization"), ("/api/user_info", "Authentication")]
)
async def test_an_over_long_key_is_refused_before_any_lookup(
    client: httpx.AsyncClient, path: str, header: str
) -> None:
    response = await client.get(path, headers={header: "Bearer mm_live_" + "a" * 100_000})
    assert response.status_code == 401
    assert "too long" in response.text


async def test_revoked_key_stops_working_at_once(
    client: httpx.AsyncClient, alice: Caller, conn: AsyncConnection
) -> None:
    assert (await client.get(BASE, headers=alice.headers)).status_code == 200
    assert await accounts.revoke_key(conn, hash_key(alice.key))
    await conn.commit()
    _assert_401(await client.get(BASE, headers=alice.headers))
    assert not await accounts.revoke_key(conn, hash_key(alice.key))


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "BeArEr"])
async def test_scheme_is_case_insensitive(
    client: httpx.AsyncClient, alice: Caller, scheme: str
) -> None:
    response = await client.get(BASE, headers={"Authorization": f"{scheme} {alice.key}"})
    assert response.status_code == 200


async def test_users_never_see_each_others_objects(
    client: httpx.AsyncClient, alice: Caller, bob: Caller
) -> None:
    mine = (await client.post(BASE, headers=alice.headers)).json()
    theirs = (await client.post(BASE, headers=bob.headers)).json()
    assert [a["id"] for a in (await client.get(BASE, headers=alice.headers)).json()] == [mine["id"]]
    assert [a["id"] for a in (await client.get(BASE, headers=bob.headers)).json()] == [theirs["id"]]
    page = (await client.get(f"{BASE}?paging=1", headers=bob.headers)).json()
    assert page["count"] == 1


@pytest.mark.parametrize(
    ("method", "body"),
    [("GET", None), ("PATCH", {"enabled": False}), ("PUT", {"description": "mine now"}),
     ("DELETE", None)],
)  # fmt: skip
async def test_another_users_id_is_404_and_changes_nothing(
    client: httpx.AsyncClient,
    alice: Caller,
    bob: Caller,
    method: str,
    body: dict[str, object] | None,
) -> None:
    target = (await client.post(BASE, headers=alice.headers)).json()
    stranger = await client.request(
        method, f"{BASE}/{target['id']}", headers=bob.headers, json=body
    )
    unknown = await client.request(method, f"{BASE}/987654321", headers=bob.headers, json=body)
    assert stranger.status_code == unknown.status_code == 404
    assert stranger.json() == unknown.json()
    assert stranger.json()["code"] == "not_found"
    after = await client.get(f"{BASE}/{target['id']}", headers=alice.headers)
    assert after.json() == target
