"""/healthz and /readyz: ready only with the database answering at the schema's head."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from alembic import command

from maskmail.app import create_app
from maskmail.readiness import smtp_problem
from maskmail.store.migrate import alembic_config, upgrade
from tests.api.conftest import make_settings
from tests.support import BACKENDS, free_port, fresh_database

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def probing(
    url: str, listener: tuple[str, int] | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(make_settings(url), listener=listener)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client


async def test_ready_at_head(database_url: str) -> None:
    async with probing(database_url) as client:
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        ready = await client.get("/readyz")
    assert ready.status_code == 200 and ready.json() == {"status": "ready"}


@pytest.fixture(params=BACKENDS)
def behind_head(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database one migration below head."""
    with fresh_database(request.param, tmp_path) as url:
        command.upgrade(alembic_config(url), "0004")
        yield url


async def test_not_ready_below_head_until_upgraded(behind_head: str) -> None:
    async with probing(behind_head) as client:
        behind = await client.get("/readyz")
        assert (await client.get("/healthz")).status_code == 200
        await asyncio.to_thread(upgrade, behind_head)
        after = await client.get("/readyz")
    assert behind.status_code == 503
    assert behind.json()["missing"] == ["schema"]
    assert "0004" in behind.json()["problems"]["schema"]
    assert after.status_code == 200


async def test_database_outage_is_not_ready_but_healthy() -> None:
    async with probing("postgresql+asyncpg://postgres@127.0.0.1:9/none") as client:
        health = await client.get("/healthz")
        ready = await client.get("/readyz")
    assert health.status_code == 200
    assert ready.status_code == 503 and ready.json()["missing"] == ["database"]
    assert "127.0.0.1" not in ready.text  # names what is missing, not the connection string


async def test_smtp_listener_must_greet(database_url: str) -> None:
    async with probing(database_url, listener=("127.0.0.1", free_port())) as client:
        ready = await client.get("/readyz")
    assert ready.status_code == 503 and ready.json()["missing"] == ["smtp"]

    async def not_smtp(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 400 Bad Request\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(not_smtp, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        assert "not 220" in (await smtp_problem("0.0.0.0", port) or "")
