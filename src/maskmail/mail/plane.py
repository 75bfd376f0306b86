"""Wiring the mail plane from settings: outbound, spam judge, handler and server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.config import Settings, load_bounce_secret
from maskmail.mail.context import MailContext
from maskmail.mail.dkim import load_signer
from maskmail.mail.handler import RelayHandler
from maskmail.mail.outbound import Outbound, Outbox, Smarthost
from maskmail.mail.server import start_smtp
from maskmail.mail.spam import SpamJudge

RSPAMD_TIMEOUT = 20.0
CLOSE_TIMEOUT = 5.0


def outbound_for(settings: Settings) -> Outbound:
    """The smarthost when one is set; otherwise the Maildir in the data dir."""
    address = settings.smarthost_address
    if address is None:
        return Outbox(settings.outbox_dir)
    host, port = address
    return Smarthost(
        host, port, timeout=settings.outbound_timeout, local_hostname=settings.mail_hostname
    )


@asynccontextmanager
async def mail_plane(
    settings: Settings, engine: AsyncEngine, *, host: str, port: int
) -> AsyncIterator[asyncio.Server]:
    """The SMTP server, listening until the block ends."""
    async with httpx.AsyncClient(timeout=RSPAMD_TIMEOUT) as client:
        context = MailContext(
            engine=engine,
            domain=settings.domain,
            hostname=settings.mail_hostname,
            outbound=outbound_for(settings),
            judge=SpamJudge(settings.trusted_relay_networks, settings.rspamd_url, client),
            bounce_secret=load_bounce_secret(settings),
            bounce_pause_threshold=settings.bounce_pause_threshold,
            signer=load_signer(
                settings.dkim_key_path, selector=settings.dkim_selector, domain=settings.domain
            ),
            authserv_ids=settings.authserv_id_list,
        )
        server = await start_smtp(
            RelayHandler(context),
            host=host,
            port=port,
            hostname=settings.mail_hostname,
            max_message_size=settings.max_message_size,
            max_connections=settings.smtp_max_connections,
            idle_timeout=settings.smtp_timeout,
        )
        try:
            yield server
        finally:
            server.close()
            # Since Python 3.12 this also waits for open sessions; do not wait forever
            # (the sessions left are cancelled with the loop).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.wait_closed(), CLOSE_TIMEOUT)
