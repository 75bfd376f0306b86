"""The API's part of the app: its routes, error mapping, documentation and middleware
(maskmail/app.py composes the app that serves it and the dashboard)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response
from starlette.types import Scope

from maskmail import __version__
from maskmail.api import allow, contracts, docs, errors, health
from maskmail.api.bodylimit import BodyLimit
from maskmail.api.front import Front
from maskmail.api.hot import HotRoutes
from maskmail.api.key_use import KeyUses
from maskmail.api.metrics import RequestTimes
from maskmail.api.metrics import router as metrics_router
from maskmail.api.proxy import Paths, route_path
from maskmail.api.routes import (
    addresses,
    bounces,
    compat_addy,
    compat_simplelogin,
    contacts,
    domains,
    keys,
    mailboxes,
    subdomains,
)
from maskmail.config import Settings
from maskmail.core.errors import MaskmailError
from maskmail.http_shared.problems import ScopeAnswer, wants_page

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

# What FastAPI calls for the app's lifespan.
Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[None]]


def new_app(settings: Settings, lifespan: Lifespan) -> FastAPI:
    """The app with the API's routes and error mapping; ``lifespan`` (the composition's,
    maskmail/app.py) sets up what the routes use. The dashboard's routes are added
    between this and ``finish``."""
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
    app.include_router(keys.router)
    return app


def finish(app: FastAPI, settings: Settings, pages: ScopeAnswer | None = None) -> None:
    """The API's documentation and its middleware, once every route is in; ``pages``
    answers the errors no route answered that a browser asked for outside the API's
    paths (``http_shared/problems.wants_page``), as the dashboard's pages."""
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
        if pages is not None and wants_page(scope, route_path(scope)):
            return pages(scope, exc)
        return contracts.outside_routes(renderers, scope, exc)

    if pages is not None:
        shown_as_pages = pages

        async def routing_error(request: Request, exc: Exception) -> Response:
            # An unknown path or a method the path does not take: routing's errors.
            if wants_page(request.scope, route_path(request.scope)):
                return shown_as_pages(request.scope, exc)
            return errors.answer(request, exc)

        for kind in (MaskmailError, RequestValidationError, StarletteHTTPException, Exception):
            app.add_exception_handler(kind, routing_error)

    # Started and stopped by the lifespan (maskmail/app.py).
    app.state.key_uses = KeyUses()
    app.add_middleware(
        Front,
        key_uses=app.state.key_uses,
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
            allow_methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
            allow_headers=list(CORS_HEADERS),
            expose_headers=["Retry-After", "WWW-Authenticate"],
            max_age=600,
        ),
    )
