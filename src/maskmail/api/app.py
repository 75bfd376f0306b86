"""The FastAPI application: engine and limiter live for the app's lifespan."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response
from starlette.types import Scope

from maskmail import __version__, metrics
from maskmail.api import allow, contracts, docs, errors, health
from maskmail.api.bodylimit import BodyLimit
from maskmail.api.front import Front
from maskmail.api.hot import HotRoutes
from maskmail.api.memo import Memo
from maskmail.api.metrics import RequestTimes
from maskmail.api.metrics import router as metrics_router
from maskmail.api.proxy import Paths
from maskmail.api.ratelimit import Limiter
from maskmail.api.routes import (
    addresses,
    bounces,
    compat_addy,
    compat_simplelogin,
    contacts,
    domains,
    mailboxes,
    subdomains,
)
from maskmail.api.routes.mailboxes import Sender
from maskmail.config import Settings
from maskmail.readiness import Readiness
from maskmail.store.driver import DriverPool
from maskmail.store.engine import create_engine, shown
from maskmail.web import router as web

DESCRIPTION = (
    "Private relay addresses: generate masks, list them, switch them off, "
    "and see what happened to their mail. Authenticate with `Authorization: Bearer <API key>`.\n\n"
    "The routes tagged *compatibility* speak the alias-creation contracts of addy.io and "
    "SimpleLogin, so password managers (Bitwarden, Keyguard) and those services' browser "
    "extensions can create maskmail addresses; see docs/clients.md."
)
# Attempts at one mailbox's verification code: a 6-digit code is not guessed at this pace.
MAILBOX_CODE_RATE = "5/hour"
# Driver connections the hot routes keep between requests (store/driver.py DriverPool).
KEPT_CONNECTIONS = 4
CORS_HEADERS = (
    "Authorization",
    "Authentication",
    "Content-Type",
    "Accept",
    "X-Requested-With",
    "X-Requested-From",
)

log = logging.getLogger("maskmail")


def create_app(
    settings: Settings,
    *,
    engine: AsyncEngine | None = None,
    listener: tuple[str, int] | None = None,
    on_started: Callable[[], None] = lambda: None,
    outbound: Sender | None = None,
) -> FastAPI:
    """The API. Given an ``engine`` (``maskmail up`` shares one with the mail plane), the
    caller disposes of it; ``listener`` is the SMTP server's address when one runs in this
    process; ``on_started`` runs once the lifespan has set everything up (the entry point
    freezes the collector there); ``outbound`` sends the mailboxes' verification messages
    (the entry points give the mail plane's smarthost or outbox)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.engine = engine or create_engine(
            settings.resolved_database_url,
            pool_size=settings.db_pool_size,
            timeout=settings.db_timeout,
        )
        app.state.drivers = drivers = DriverPool(app.state.engine, keep=KEPT_CONNECTIONS)
        app.state.readiness = Readiness.of(app.state.engine, smtp=listener)
        if engine is None:  # a given engine is watched (and told in the log) by its owner
            metrics.watch_pool(app.state.engine, "api")
            log.info("database: %s", shown(settings.resolved_database_url))
        app.state.limiter = Limiter(settings.rate_limit, settings.redis_url)
        app.state.signin_limiter = Limiter(settings.signin_rate_limit, settings.redis_url)
        app.state.memo = Memo()
        app.state.code_limiter = Limiter(MAILBOX_CODE_RATE, settings.redis_url)
        app.state.outbound = outbound
        on_started()
        try:
            yield
        finally:
            app.state.memo.clear()
            await drivers.close()
            await app.state.limiter.close()
            await app.state.signin_limiter.close()
            await app.state.code_limiter.close()
            if outbound is not None:
                await outbound.close()
            if engine is None:
                await app.state.engine.dispose()
            metrics.process_exited()

    app = FastAPI(
        title="maskmail",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        redirect_slashes=False,
        # /docs is served from shipped assets (api/docs.py); ReDoc would load from a CDN.
        docs_url=None,
        redoc_url=None,
        # Scripts often send JSON without a Content-Type; Bearer auth rules out CSRF.
        strict_content_type=False,
        # maskmail exports no OpenTelemetry (its metrics are api/metrics.py); off, FastAPI
        # skips looking for a configured provider on every request.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.settings = settings
    errors.install(app)
    allow.install(app)
    app.include_router(health.router)
    app.include_router(metrics_router)
    app.include_router(addresses.router)
    app.include_router(contacts.router)
    app.include_router(mailboxes.router)
    app.include_router(bounces.router)
    app.include_router(compat_addy.router)
    app.include_router(compat_simplelogin.router)
    app.include_router(subdomains.router)
    app.include_router(domains.router)
    web.install(app)
    docs.install(
        app,
        patches=[
            compat_addy.document_domain(settings.domain),
            addresses.document_domain(settings.domain),
        ],
    )
    # Innermost: the two hottest routes skip routing, everything else still applies.
    app.add_middleware(
        HotRoutes,
        routes={
            ("GET", addresses.router.prefix): addresses.list_addresses,
            ("POST", addresses.router.prefix): addresses.create_address,
        },
    )
    # The contracts' own error bodies, by path prefix, longest first.
    renderers = sorted(
        [
            (compat_addy.router.prefix, compat_addy.render_error),
            (compat_simplelogin.router.prefix, compat_simplelogin.render_error),
        ],
        key=lambda pair: -len(pair[0]),
    )

    def outside_routes(scope: Scope, exc: Exception) -> Response:
        return contracts.outside_routes(renderers, scope, exc)

    app.add_middleware(
        Front,
        paths=Paths(settings),
        body_limit=BodyLimit(settings.max_body_bytes, answer=outside_routes),
        answer=outside_routes,
        # The hot routes' path is their template.
        times=RequestTimes(fixed=frozenset({addresses.router.prefix})),
        # Browser extensions and web vaults call from another origin; preflights are
        # answered here, before routing.
        cors=lambda inner: CORSMiddleware(
            inner,
            allow_origins=settings.cors_origin_list,
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
            allow_headers=list(CORS_HEADERS),
            expose_headers=["Retry-After", "WWW-Authenticate"],
            max_age=600,
        ),
    )
    return app
