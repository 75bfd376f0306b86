"""GET /v3/relay/addresses/{id}/bounces: the owner's view of bounces and of a pause."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.dsn import Bounce, Kind
from maskmail.store.address_bounces import record_bounce
from maskmail.store.clock import now
from tests.api.conftest import BASE, Caller, ClientFactory

pytestmark = pytest.mark.anyio
SPEC_FIELDS = {
    "id", "address", "enabled", "block_spam", "description", "created_time", "updated_time",
    "num_forwarded", "num_blocked", "num_replied", "num_spam", "domain", "subdomain",
    "full_address",
}  # fmt: skip


async def _new(client: httpx.AsyncClient, caller: Caller) -> int:
    response = await client.post(BASE, headers=caller.headers)
    assert response.status_code == 200
    address_id: int = response.json()["id"]
    return address_id


async def test_a_new_address_has_no_bounces(client: httpx.AsyncClient, alice: Caller) -> None:
    address_id = await _new(client, alice)
    response = await client.get(f"{BASE}/{address_id}/bounces", headers=alice.headers)
    assert response.status_code == 200
    assert response.json() == {
        "paused": False,
        "paused_time": None,
        "threshold": 5,
        "hard_bounces_24h": 0,
        "bounces": [],
    }


async def test_a_pause_shows_as_disabled_and_enabling_lifts_it(
    reconfigured: ClientFactory, conn: AsyncConnection, alice: Caller
) -> None:
    async with reconfigured(bounce_pause_threshold=2) as client:
        address_id = await _new(client, alice)
        t = now()
        await record_bounce(conn, address_id, Bounce(Kind.SOFT, "4.4.1"), threshold=2, when=t)
        for i in (1, 2):
            await record_bounce(
                conn, address_id, Bounce(Kind.HARD, "5.1.1"), threshold=2, when=t + i
            )
        await conn.commit()
        url = f"{BASE}/{address_id}"
        shown = (await client.get(url, headers=alice.headers)).json()
        # The SPEC's object, field for field: a pause is enabled=false, nothing more.
        assert set(shown) == SPEC_FIELDS
        assert (shown["enabled"], shown["updated_time"]) == (False, t + 2)
        report = (await client.get(f"{url}/bounces", headers=alice.headers)).json()
        assert report == {
            "paused": True,
            "paused_time": t + 2,
            "threshold": 2,
            "hard_bounces_24h": 2,
            "bounces": [
                {"received_time": t + 2, "kind": "hard", "status": "5.1.1", "forgiven": False},
                {"received_time": t + 1, "kind": "hard", "status": "5.1.1", "forgiven": False},
                {"received_time": t, "kind": "soft", "status": "4.4.1", "forgiven": False},
            ],
        }
        enabled = await client.put(url, headers=alice.headers, json={"enabled": True})
        assert enabled.status_code == 200 and enabled.json()["enabled"] is True
        report = (await client.get(f"{url}/bounces", headers=alice.headers)).json()
        assert (report["paused"], report["paused_time"], report["hard_bounces_24h"]) == (
            False, None, 0,
        )  # fmt: skip
        assert [b["forgiven"] for b in report["bounces"]] == [True, True, True]


async def test_someone_elses_or_an_unknown_id_is_404(
    client: httpx.AsyncClient, alice: Caller, bob: Caller
) -> None:
    address_id = await _new(client, alice)
    for url in (f"{BASE}/{address_id}/bounces", f"{BASE}/{address_id + 10_000}/bounces"):
        response = await client.get(url, headers=bob.headers)
        assert response.status_code == 404
        assert response.json()["code"] == "not_found"


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer mm_not_a_real_key"}, {"Authorization": "Basic abc"}],
)
async def test_without_a_usable_key_is_401(
    client: httpx.AsyncClient, alice: Caller, headers: dict[str, str]
) -> None:
    address_id = await _new(client, alice)
    response = await client.get(f"{BASE}/{address_id}/bounces", headers=headers)
    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"
    assert response.headers["www-authenticate"].lower().startswith("bearer")


async def test_documented_in_openapi(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    operation = schema["paths"][f"{BASE}/{{address_id}}/bounces"]["get"]
    assert {"200", "401", "404", "429", "500", "503"} <= set(operation["responses"])
    ok = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/Bounces"}
    fields = schema["components"]["schemas"]["Bounces"]["properties"]
    assert set(fields) == {"paused", "paused_time", "threshold", "hard_bounces_24h", "bounces"}
    # The Private Email object keeps the SPEC's fields only.
    assert set(schema["components"]["schemas"]["PrivateEmail"]["properties"]) == SPEC_FIELDS
