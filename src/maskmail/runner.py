"""Running the servers: uvicorn for the API, and both planes in one process for ``up``."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import socket
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from types import FrameType
from typing import Any

import uvicorn
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail import metrics
from maskmail.api.headcap import MAX_HEAD_BYTES
from maskmail.api.health import health_app
from maskmail.api.one_write import OneWriteHttpTools
from maskmail.app import create_app
from maskmail.config import Settings
from maskmail.mail.plane import Listeners, mail_plane, notices_for
from maskmail.readiness import Readiness
from maskmail.startup import bind
from maskmail.store.engine import create_engine, shown

log = logging.getLogger("maskmail")

APP_FACTORY = "maskmail.asgi:app_from_env"


def uvicorn_options(access_log: bool) -> dict[str, object]:
    """How every maskmail process runs uvicorn (the tests serve apps the same way)."""
    return {
        # Forwarded headers are judged by the app against MASKMAIL_TRUSTED_PROXIES.
        "proxy_headers": False,
        "server_header": False,
        "access_log": access_log,
        # maskmail.logs configured the process: uvicorn adds no handlers or levels of its own.
        "log_config": None,
        "timeout_graceful_shutdown": 10,
        "http": OneWriteHttpTools,
        # The same cap where h11 is used instead (uvicorn's own option).
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
    }


def serve_api(*, host: str, port: int, workers: int, access_log: bool) -> None:
    """The API alone; several workers share nothing but the database (and Redis)."""
    # uvicorn logs a busy port and exits; trying it first gives the one-line answer.
    bind(host, port, "the API", "--port").close()
    uvicorn.run(
        APP_FACTORY,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        # A worker importing the app on a loaded machine can take longer than the default 5 s;
        # killing it then only adds load.
        timeout_worker_healthcheck=30,
        **uvicorn_options(access_log),  # type: ignore[arg-type]
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


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def _after_uvicorn() -> Iterator[None]:
    """uvicorn raises the signal that stopped it once more when its own shutdown is
    done; under the default handler that killed the process before the mail plane's
    orderly stop (docs/operations.md), cutting off a message under way. That echo is
    taken as already heard; a second signal, someone pressing Ctrl-C again, stops the
    process at once."""
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    heard = 0

    def restore() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    def hear(signum: int, _frame: FrameType | None) -> None:
        nonlocal heard
        heard += 1
        if heard > 1:
            restore()
            signal.raise_signal(signum)

    for signum in STOP_SIGNALS:
        signal.signal(signum, hear)
    try:
        yield
    finally:
        restore()


async def run_up(
    settings: Settings, *, host: str, api_port: int, smtp_port: int, access_log: bool = False
) -> None:
    """The API and the mail plane in one event loop, until SIGINT or SIGTERM.

    uvicorn owns the signals: when it stops serving, the SMTP server is closed too.
    """
    # Both ports are taken before anything is logged, so a busy one is the only line.
    api_socket = bind(host, api_port, "the API", "--api-port")
    with ExitStack() as signals:
        async with _smtp(settings, host, smtp_port) as engine:
            # One engine, one pool, for both planes; frozen once both are up.
            config = uvicorn.Config(
                create_app(
                    settings,
                    engine=engine,
                    listener=(host, smtp_port),
                    on_started=gc.freeze,
                    outbound=notices_for(settings),
                ),
                host=host,
                port=api_port,
                **uvicorn_options(access_log),  # type: ignore[arg-type]
            )
            signals.enter_context(_after_uvicorn())  # until the mail plane has stopped
            await uvicorn.Server(config).serve(sockets=[api_socket])


async def run_smtp(
    settings: Settings,
    *,
    host: str,
    port: int,
    health_port: int | None = None,
    sockets: Listeners | None = None,
    health_socket: socket.socket | None = None,
) -> None:
    """The mail plane alone, until SIGINT or SIGTERM; with ``health_port``, the probes
    are served there (and uvicorn owns the signals, as in ``run_up``). A worker of
    ``smtp --workers`` is given the sockets it shares with the others."""
    if health_port is not None:
        # Taken before SMTP listens, so a busy port is one line and nothing was served.
        if health_socket is None:
            health_socket = bind(host, health_port, "the health probes", "--health-port")
        with ExitStack() as signals:
            async with _smtp(settings, host, port, sockets=sockets) as engine:
                readiness = Readiness.of(engine, smtp=(host, port))
                config = uvicorn.Config(
                    health_app(readiness, settings),
                    host=host,
                    port=health_port,
                    **uvicorn_options(False),  # type: ignore[arg-type]
                )
                signals.enter_context(_after_uvicorn())
                await uvicorn.Server(config).serve(sockets=[health_socket])
        return
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with _smtp(settings, host, port, on_started=gc.freeze, sockets=sockets):
        await stop.wait()


@asynccontextmanager
async def _smtp(
    settings: Settings,
    host: str,
    port: int,
    on_started: Callable[[], None] = lambda: None,
    sockets: Listeners | None = None,
) -> AsyncIterator[AsyncEngine]:
    """The mail plane and its engine, listening while the block runs."""
    engine = create_engine(
        settings.resolved_database_url, pool_size=settings.db_pool_size, timeout=settings.db_timeout
    )
    metrics.watch_pool(engine, "mail")
    try:
        async with mail_plane(
            settings, engine, host=host, port=port, on_started=on_started, sockets=sockets
        ):
            log.info("SMTP listening on %s:%d for @%s", host, port, settings.domain)
            log.info("database: %s", shown(settings.resolved_database_url))
            yield engine
    finally:
        await engine.dispose()
