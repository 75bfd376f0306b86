"""API fixtures: the real app over ASGITransport, with only get_conn overridden."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.api.app import create_app
from maskmail.api.deps import get_conn
from maskmail.config import Settings
from maskmail.core import keys
from maskmail.store import accounts, raw
from maskmail.store.engine import unavailable_on_outage
from maskmail.store.raw import Raw, RawSource

DOMAIN = "relay.test"
BASE = "/v3/relay/addresses"


@dataclass
class Caller:
    email: str
    user_id: int
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}", "Accept": "application/json"}


def make_settings(database_url: str, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "database_url": database_url,
        "domain": DOMAIN,
        "rate_limit": "100000/minute",
        **overrides,
    }
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url)


AppFactory = Callable[..., Awaitable[FastAPI]]


@asynccontextmanager
async def started_app(settings: Settings, conn: AsyncConnection) -> AsyncIterator[FastAPI]:
    """The real app, through its lifespan, with requests on the test's connection."""
    application = create_app(settings)

    async def test_conn() -> AsyncIterator[AsyncConnection]:
        # Each request gets a savepoint: a failing request undoes only its own work,
        # and the test's outer transaction is rolled back at the end.
        async with conn.begin_nested():
            yield conn

    application.dependency_overrides[get_conn] = test_conn
    async with application.router.lifespan_context(application):
        # The hot routes use the driver directly (store/raw.py): the same connection.
        application.state.raw = connection_source(conn)
        yield application


def connection_source(conn: AsyncConnection) -> RawSource:
    """Driver access through the test's connection, each use in its own savepoint."""

    @asynccontextmanager
    async def source() -> AsyncIterator[Raw]:
        with unavailable_on_outage():
            async with conn.begin_nested():
                yield await raw.of_connection(conn)

    return source


@asynccontextmanager
async def client_for(
    app: FastAPI, peer: tuple[str, int] = ("127.0.0.1", 123)
) -> AsyncIterator[httpx.AsyncClient]:
    """``peer`` is the client address the app sees (the default is a trusted proxy)."""
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False, client=peer)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


@asynccontextmanager
async def client_with(
    settings: Settings, conn: AsyncConnection
) -> AsyncIterator[httpx.AsyncClient]:
    async with started_app(settings, conn) as application, client_for(application) as c:
        yield c


ClientFactory = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def reconfigured(database_url: str, conn: AsyncConnection) -> ClientFactory:
    """``async with reconfigured(rate_limit=...)``: a client for an app with other settings."""

    def make(**overrides: object) -> AbstractAsyncContextManager[httpx.AsyncClient]:
        return client_with(make_settings(database_url, **overrides), conn)

    return make


@pytest.fixture
async def app(settings: Settings, conn: AsyncConnection) -> AsyncIterator[FastAPI]:
    async with started_app(settings, conn) as application:
        yield application


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(app) as c:
        yield c


UserFactory = Callable[[str], Awaitable[Caller]]


@pytest.fixture
def make_user(conn: AsyncConnection) -> UserFactory:
    async def make(email: str) -> Caller:
        user_id = await accounts.add_user(conn, email)
        key = keys.generate_key()
        await accounts.add_key(conn, user_id, keys.hash_key(key))
        return Caller(email=email, user_id=user_id, key=key)

    return make


@pytest.fixture
async def alice(make_user: UserFactory) -> Caller:
    return await make_user("alice@example.com")


@pytest.fixture
async def bob(make_user: UserFactory) -> Caller:
    return await make_user("bob@example.org")
