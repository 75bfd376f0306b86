"""The HTTP app that serves both doors, composed above them: the API's routes, the
dashboard's pages and the mailbox link's page, and what they share for the app's
lifespan (engine, limiters, the outbound path)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail import metrics
from maskmail.api import app as api
from maskmail.api.docs import page_errors_for
from maskmail.api.memo import Memo
from maskmail.config import Settings
from maskmail.http_shared.ratelimit import Limiter
from maskmail.readiness import Readiness
from maskmail.services import account_mail
from maskmail.services.sending import Sender
from maskmail.store.driver import DriverPool
from maskmail.store.engine import create_engine, shown
from maskmail.web import router as web
from maskmail.web.pages import mailbox_link

# Attempts at one mailbox's verification code: a 6-digit code is not guessed at this pace.
MAILBOX_CODE_RATE = "5/hour"
# Driver connections the hot routes keep between requests (store/driver.py DriverPool).
KEPT_CONNECTIONS = 4
# Seconds a stopping app waits for account mail still leaving.
ACCOUNT_MAIL_GRACE = 5

log = logging.getLogger("maskmail")


def create_app(
    settings: Settings,
    *,
    engine: AsyncEngine | None = None,
    listener: tuple[str, int] | None = None,
    on_started: Callable[[], None] = lambda: None,
    outbound: Sender | None = None,
) -> FastAPI:
    """The API and the dashboard. Given an ``engine`` (``maskmail up`` shares one with
    the mail plane), the caller disposes of it; ``listener`` is the SMTP server's address
    when one runs in this process; ``on_started`` runs once the lifespan has set
    everything up (the entry point freezes the collector there); ``outbound`` sends the
    mailboxes' verification messages (the entry points give the mail plane's smarthost
    or outbox)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.engine = engine or create_engine(
            settings.resolved_database_url,
            pool_size=settings.db_pool_size,
            timeout=settings.db_timeout,
        )
        app.state.drivers = drivers = DriverPool(
            app.state.engine, keep=KEPT_CONNECTIONS, hand_over=True
        )
        app.state.readiness = Readiness.of(app.state.engine, smtp=listener)
        if engine is None:  # a given engine is watched (and told in the log) by its owner
            metrics.watch_pool(app.state.engine, "api")
            log.info("database: %s", shown(settings.resolved_database_url))
        app.state.limiter = Limiter(settings.rate_limit, settings.redis_url)
        app.state.signin_limiter = Limiter(settings.signin_rate_limit, settings.redis_url)
        app.state.memo = Memo()
        app.state.code_limiter = Limiter(MAILBOX_CODE_RATE, settings.redis_url)
        app.state.signup_limiter = Limiter(settings.signup_rate_limit, settings.redis_url)
        app.state.outbound = outbound
        app.state.key_uses.start(drivers)
        on_started()
        try:
            yield
        finally:
            app.state.memo.clear()
            await app.state.key_uses.close()
            await drivers.close()
            await app.state.limiter.close()
            await app.state.signin_limiter.close()
            await app.state.code_limiter.close()
            await app.state.signup_limiter.close()
            # Reset links and sign-in notices still leaving (services/account_mail.py).
            await account_mail.settle(ACCOUNT_MAIL_GRACE)
            if outbound is not None:
                await outbound.close()
            if engine is None:
                await app.state.engine.dispose()
            metrics.process_exited()

    app = api.new_app(settings, lifespan)
    app.include_router(mailbox_link.routes(page_errors_for))
    web.install(app)
    api.finish(app, settings, pages=web.outside_routes)
    return app
