"""API fixtures: the real app over ASGITransport, on its own engine and pool, as in production;
the tables are emptied after each test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from maskmail.app import create_app
from maskmail.config import Settings
from maskmail.core import keys
from maskmail.mail.plane import notices_for
from maskmail.store import accounts
from maskmail.store.engine import READONLY, transaction
from maskmail.store.tables import metadata

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


@pytest.fixture
async def clean(engine: AsyncEngine) -> AsyncIterator[AsyncEngine]:
    """The database as the test leaves it is emptied afterwards: the app commits."""
    yield engine
    async with transaction(engine) as connection:
        for table in reversed(metadata.sorted_tables):
            await connection.execute(delete(table))


@pytest.fixture
async def conn(clean: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A connection to set up and read back outside any request. The app runs on its own
    pool, as in production, so a test commits what it writes here before a request."""
    async with clean.connect() as connection:
        # Deferred on SQLite: reading here never holds the write lock the app needs.
        await connection.execution_options(**{READONLY: True})
        yield connection


@asynccontextmanager
async def started_app(settings: Settings) -> AsyncIterator[FastAPI]:
    """The real app, through its lifespan: its own engine, pool and driver connections."""
    application = create_app(settings, outbound=notices_for(settings))
    async with application.router.lifespan_context(application):
        yield application


@asynccontextmanager
async def client_for(
    app: FastAPI, peer: tuple[str, int] = ("127.0.0.1", 123)
) -> AsyncIterator[httpx.AsyncClient]:
    """``peer`` is the client address the app sees (the default is a trusted proxy)."""
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False, client=peer)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


@asynccontextmanager
async def client_with(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with started_app(settings) as application, client_for(application) as c:
        yield c


ClientFactory = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def reconfigured(database_url: str, clean: AsyncEngine) -> ClientFactory:
    """``async with reconfigured(rate_limit=...)``: a client for an app with other settings."""

    def make(**overrides: object) -> AbstractAsyncContextManager[httpx.AsyncClient]:
        return client_with(make_settings(database_url, **overrides))

    return make


@pytest.fixture
async def app(settings: Settings, clean: AsyncEngine) -> AsyncIterator[FastAPI]:
    async with started_app(settings) as application:
        yield application


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(app) as c:
        yield c


UserFactory = Callable[[str], Awaitable[Caller]]


@pytest.fixture
def make_user(clean: AsyncEngine) -> UserFactory:
    async def make(email: str) -> Caller:
        key = keys.generate_key()
        async with transaction(clean) as connection:
            user_id = await accounts.add_user(connection, email)
            await accounts.add_key(connection, user_id, keys.hash_key(key))
        return Caller(email=email, user_id=user_id, key=key)

    return make


@pytest.fixture
async def alice(make_user: UserFactory) -> Caller:
    return await make_user("alice@example.com")


@pytest.fixture
async def bob(make_user: UserFactory) -> Caller:
    return await make_user("bob@example.org")
