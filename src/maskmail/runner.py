"""Running the servers: uvicorn for the API, and both planes in one process for ``up``."""

from __future__ import annotations

import asyncio
import logging

import uvicorn

from maskmail.api.app import create_app
from maskmail.config import Settings

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


async def run_up(settings: Settings, *, host: str, api_port: int, smtp_port: int) -> None:
    """The API and the mail plane in one event loop, until SIGINT or SIGTERM."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:%(name)s: %(message)s")
    config = uvicorn.Config(
        create_app(settings),
        host=host,
        port=api_port,
        **_uvicorn_options(False),  # type: ignore[arg-type]
    )
    server = uvicorn.Server(config)
    await server.serve()
    await asyncio.sleep(0)
