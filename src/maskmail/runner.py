"""Running the servers: uvicorn for the API, and both planes in one process for ``up``."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import uvicorn

from maskmail.api.app import create_app
from maskmail.config import Settings
from maskmail.mail.plane import mail_plane
from maskmail.store.engine import create_engine

log = logging.getLogger("maskmail")

APP_FACTORY = "maskmail.api.main:app_from_env"


def _uvicorn_options(access_log: bool) -> dict[str, object]:
    return {
        # Forwarded headers are judged by the app against MASKMAIL_TRUSTED_PROXIES.
        "proxy_headers": False,
        "server_header": False,
        "access_log": access_log,
        "log_level": "info",
        "timeout_graceful_shutdown": 10,
    }


def serve_api(*, host: str, port: int, workers: int, access_log: bool) -> None:
    """The API alone; several workers share nothing but the database (and Redis)."""
    uvicorn.run(
        APP_FACTORY,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        # A worker importing the app on a loaded machine can take longer than the default 5 s;
        # killing it then only adds load.
        timeout_worker_healthcheck=30,
        **_uvicorn_options(access_log),  # type: ignore[arg-type]
    )


def run_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run a server's event loop: uvloop's where installed (uvicorn[standard] brings it).

    The mail plane spends much of its CPU in the loop's socket and callback handling,
    which uvloop does in C (docs/benchmarks.md).
    """
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
        return
    uvloop.run(main)


def _configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:%(name)s: %(message)s")


async def run_up(settings: Settings, *, host: str, api_port: int, smtp_port: int) -> None:
    """The API and the mail plane in one event loop, until SIGINT or SIGTERM.

    uvicorn owns the signals: when it stops serving, the SMTP server is closed too.
    """
    _configure_logging()
    config = uvicorn.Config(
        create_app(settings),
        host=host,
        port=api_port,
        **_uvicorn_options(False),  # type: ignore[arg-type]
    )
    server = uvicorn.Server(config)
    async with _smtp(settings, host, smtp_port):
        await server.serve()


async def run_smtp(settings: Settings, *, host: str, port: int) -> None:
    """The mail plane alone, until SIGINT or SIGTERM."""
    _configure_logging()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with _smtp(settings, host, port):
        await stop.wait()


@asynccontextmanager
async def _smtp(settings: Settings, host: str, port: int) -> AsyncIterator[None]:
    """The mail plane with its own engine, listening while the block runs."""
    engine = create_engine(settings.resolved_database_url, pool_size=settings.db_pool_size)
    try:
        async with mail_plane(settings, engine, host=host, port=port):
            log.info("SMTP listening on %s:%d for @%s", host, port, settings.domain)
            yield
    finally:
        await engine.dispose()
