"""The FastAPI application: engine and limiter live for the app's lifespan."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from maskmail import __version__
from maskmail.api import docs, errors
from maskmail.api.bodylimit import BodyLimit
from maskmail.api.hot import HotRoutes
from maskmail.api.proxy import PathMiddleware
from maskmail.api.ratelimit import Limiter
from maskmail.api.routes import addresses, bounces, compat_addy, compat_simplelogin, contacts
from maskmail.config import Settings
from maskmail.store import raw
from maskmail.store.engine import create_engine

DESCRIPTION = (
    "Private relay addresses: generate masks, list them, switch them off, "
    "and see what happened to their mail. Authenticate with `Authorization: Bearer <API key>`.\n\n"
    "The routes tagged *compatibility* speak the alias-creation contracts of addy.io and "
    "SimpleLogin, so password managers (Bitwarden, Keyguard) and those services' browser "
    "extensions can create maskmail addresses; see docs/clients.md."
)
CORS_HEADERS = (
    "Authorization",
    "Authentication",
    "Content-Type",
    "Accept",
    "X-Requested-With",
    "X-Requested-From",
)


def create_app(settings: Settings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.engine = create_engine(
            settings.resolved_database_url, pool_size=settings.db_pool_size
        )
        app.state.raw = raw.Source(app.state.engine)
        app.state.limiter = Limiter(settings.rate_limit, settings.redis_url)
        # Everything alive now lives as long as the app: keep the collector from walking it
        # again on every full collection (a listing of 1,000 addresses triggered several).
        gc.freeze()
        try:
            yield
        finally:
            await app.state.limiter.close()
            await app.state.engine.dispose()

    app = FastAPI(
        title="maskmail",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        redirect_slashes=False,
        # Scripts often send JSON without a Content-Type; Bearer auth rules out CSRF.
        strict_content_type=False,
    )
    app.state.settings = settings
    errors.install(app)
    app.include_router(addresses.router)
    app.include_router(contacts.router)
    app.include_router(bounces.router)
    app.include_router(compat_addy.router)
    app.include_router(compat_simplelogin.router)
    docs.install(app, patches=[compat_addy.document_domain(settings.domain)])
    # Innermost: the two hottest routes skip routing, everything else still applies.
    app.add_middleware(
        HotRoutes,
        routes={
            ("GET", addresses.router.prefix): addresses.list_addresses,
            ("POST", addresses.router.prefix): addresses.create_address,
        },
    )
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    # Browser extensions and web vaults call from another origin; preflights are
    # answered here, before routing.
    app.add_middleware(
        CORSMiddleware,
        allow_origins=settings.cors_origin_list,
        allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
        allow_headers=list(CORS_HEADERS),
        expose_headers=["Retry-After", "WWW-Authenticate"],
        max_age=600,
    )
    # Outermost, so that CORS and routing both see the cleaned path.
    app.add_middleware(PathMiddleware, settings=settings)
    return app
