"""Fixtures for every test package: one migrated database per backend per session."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from maskmail.logs import QUIET_LIBRARIES
from maskmail.store.engine import create_engine
from maskmail.store.migrate import upgrade
from tests import profiles  # noqa: F401  (registers the check profile before it is loaded)
from tests.pgp_keys import stop_agent
from tests.sink import Sink
from tests.support import BACKENDS, free_port, fresh_database


def pytest_sessionfinish(session: pytest.Session) -> None:
    """No gpg-agent of the tests' outlives them."""
    stop_agent()


@pytest.fixture(autouse=True)
def logging_as_found() -> Iterator[None]:
    """Each test sees the loggers as it found them. uvicorn's Config turns the access
    log's propagation off in the process that builds it, and ``logs.configure`` sets
    levels: one test would otherwise decide what a later test on the same worker sees."""
    names = ("", "uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi", *QUIET_LIBRARIES)
    loggers = [logging.getLogger(name) for name in names]
    kept = [(g, g.handlers[:], g.level, g.propagate, g.disabled) for g in loggers]
    yield
    for logger, handlers, level, propagate, disabled in kept:
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate, logger.disabled = propagate, disabled


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", params=BACKENDS)
def database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A database migrated to head, shared by the session's tests of one backend."""
    with fresh_database(request.param, tmp_path_factory.mktemp("db")) as url:
        upgrade(url)
        yield url


@pytest.fixture
def backend(database_url: str) -> str:
    return "sqlite" if database_url.startswith("sqlite") else "postgres"


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url, pool_size=2)
    yield engine
    await engine.dispose()


@pytest.fixture
async def conn(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A connection inside a transaction that is rolled back after the test."""
    async with engine.connect() as connection:
        outer = await connection.begin()
        yield connection
        await outer.rollback()


@pytest.fixture
def sink() -> Iterator[Sink]:
    """An in-process smarthost that records what arrives, stopped after the test."""
    server = Sink(free_port())
    server.start()
    yield server
    server.stop()
