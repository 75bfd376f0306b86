"""What every request goes through (api/front.py): CORS's Vary, the key's last use, and
metrics by template for a body whose Content-Type was replaced."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client import REGISTRY
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.api.key_use import KeyUses
from maskmail.core.errors import StoreUnavailable
from maskmail.store.driver import DriverPool
from maskmail.store.engine import transaction
from maskmail.store.tables import api_keys
from tests.api.conftest import BASE, Caller, ClientFactory

pytestmark = pytest.mark.anyio


async def last_used(engine: AsyncEngine, user_id: int) -> int | None:
    async with engine.connect() as connection:
        query = select(api_keys.c.last_used_time).where(api_keys.c.user_id == user_id)
        found: int | None = (await connection.execute(query)).scalar_one()
        return found


async def forget_use(engine: AsyncEngine, user_id: int) -> None:
    async with transaction(engine) as connection:
        statement = update(api_keys).where(api_keys.c.user_id == user_id)
        await connection.execute(statement.values(last_used_time=None))


async def test_every_answer_varies_by_origin(client: httpx.AsyncClient, alice: Caller) -> None:
    plain = await client.get(BASE, headers=alice.headers)
    crossed = await client.get(BASE, headers={**alice.headers, "Origin": "https://vault.example"})
    for response in (plain, crossed):
        assert response.status_code == 200
        assert response.headers.get_list("vary") == ["Origin"]
    assert "access-control-allow-origin" not in plain.headers
    assert crossed.headers["access-control-allow-origin"] == "*"
    assert (await client.get("/nowhere")).headers["vary"] == "Origin"


async def test_a_key_is_marked_used_once_a_minute_and_only_on_success(
    app: FastAPI, client: httpx.AsyncClient, alice: Caller, bob: Caller, clean: AsyncEngine
) -> None:
    key_uses: KeyUses = app.state.key_uses
    assert await last_used(clean, alice.user_id) is None
    assert (await client.post(BASE, headers=alice.headers)).status_code == 200
    # Noted, and written off the request path.
    assert await last_used(clean, alice.user_id) is None
    await key_uses.write()
    first = await last_used(clean, alice.user_id)
    assert first is not None
    # Within the minute, another success writes nothing.
    await forget_use(clean, alice.user_id)
    assert (await client.get(BASE, headers=alice.headers)).status_code == 200
    await key_uses.write()
    assert await last_used(clean, alice.user_id) is None
    # A refused request is no use of the key it named.
    refused = await client.get(f"{BASE}/999999", headers=bob.headers)
    assert refused.status_code == 404
    await key_uses.write()
    assert await last_used(clean, bob.user_id) is None


async def test_a_use_not_written_for_an_outage_is_written_on_the_next_try(
    app: FastAPI,
    client: httpx.AsyncClient,
    alice: Caller,
    clean: AsyncEngine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key_uses: KeyUses = app.state.key_uses
    assert (await client.get(BASE, headers=alice.headers)).status_code == 200
    drivers: DriverPool = app.state.drivers

    async def unavailable(*_: object, **__: object) -> None:
        raise StoreUnavailable("down")

    monkeypatch.setattr(drivers, "run", unavailable)
    await key_uses.write()
    monkeypatch.undo()
    assert await last_used(clean, alice.user_id) is None
    await key_uses.write()
    assert await last_used(clean, alice.user_id) is not None


async def test_a_key_used_under_a_path_prefix_is_marked_used(
    reconfigured: ClientFactory, alice: Caller, clean: AsyncEngine
) -> None:
    async with reconfigured(root_path="/relay") as client:
        response = await client.get(f"/relay{BASE}", headers=alice.headers)
    assert response.status_code == 200
    # Written when the app stopped.
    assert await last_used(clean, alice.user_id) is not None


async def test_a_body_sent_as_text_is_counted_under_its_route_template(
    client: httpx.AsyncClient, alice: Caller
) -> None:
    template = f"{BASE}/{{address_id}}"
    labels = {"method": "PATCH", "route": template, "status": "404"}
    name = "maskmail_http_request_duration_seconds_count"
    before = REGISTRY.get_sample_value(name, labels) or 0.0
    headers = {**alice.headers, "Content-Type": "text/plain"}
    response = await client.patch(f"{BASE}/999999", headers=headers, content=b'{"enabled": false}')
    assert response.status_code == 404
    assert REGISTRY.get_sample_value(name, labels) == before + 1
