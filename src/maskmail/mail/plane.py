"""Wiring the mail plane from settings: outbound, spam judge, handler and server."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.config import Settings, load_bounce_secret
from maskmail.core.first_mail import OwnerLimits
from maskmail.mail.activity_pruning import forget_old_activity
from maskmail.mail.context import MailContext
from maskmail.mail.dkim import Signer, load_signer
from maskmail.mail.handler import RelayHandler
from maskmail.mail.outbound import Outbox, Smarthost
from maskmail.mail.pending_counts import replay
from maskmail.mail.policy import start_policy
from maskmail.mail.server import Listening, start_smtp
from maskmail.mail.spam import SpamJudge
from maskmail.services.relay_domains import relay_domains
from maskmail.startup import bind, inherited_socket
from maskmail.store.engine import transaction

log = logging.getLogger("maskmail")

RSPAMD_TIMEOUT = 20.0
CLOSE_TIMEOUT = 5.0
# Driver connections the mail plane keeps between a message's scripts (MailContext).
KEPT_DRIVERS = 1


@dataclass(frozen=True)
class Listeners:
    """The mail plane's listening sockets, opened once and shared by every worker of
    ``smtp --workers``: SMTP's, and the policy service's when it is on."""

    smtp: socket.socket
    policy: socket.socket | None

    def close(self) -> None:
        self.smtp.close()
        if self.policy is not None:
            self.policy.close()


def _listening(host: str, port: int, what: str, option: str) -> socket.socket:
    """The socket systemd passed for ``port``, or a new one listening on ``host:port``."""
    inherited = inherited_socket(port)
    if inherited is not None:
        return inherited
    sock = bind(host, port, what, option)
    sock.listen(socket.SOMAXCONN)
    sock.setblocking(False)
    return sock


def open_listeners(settings: Settings, *, host: str, port: int) -> Listeners:
    smtp = _listening(host, port, "SMTP", "--port")
    policy = None
    if settings.policy_port:
        policy = _listening(host, settings.policy_port, "the policy service", "--policy-port")
    return Listeners(smtp, policy)


def outbound_for(settings: Settings) -> Smarthost | Outbox:
    """The smarthost when one is set; otherwise the Maildir in the data dir."""
    address = settings.smarthost_address
    if address is None:
        return Outbox(settings.outbox_dir)
    host, port = address
    return Smarthost(
        host, port, timeout=settings.outbound_timeout, local_hostname=settings.mail_hostname
    )


def signer_for(settings: Settings) -> Signer | None:
    return load_signer(
        settings.dkim_key_path, selector=settings.dkim_selector, domain=settings.domain
    )


class Notices:
    """maskmail's own messages from the relay domain (a mailbox's verification): signed
    with the relay domain's DKIM key as forwards are, so they pass DMARC, then sent the
    same way."""

    def __init__(self, outbound: Smarthost | Outbox, signer: Signer | None) -> None:
        self.outbound = outbound
        self.signer = signer

    async def deliver(self, message: bytes, *, sender: str, recipient: str) -> None:
        if self.signer is not None:
            message = await self.signer.sign(message)
        await self.outbound.deliver(message, sender=sender, recipient=recipient)

    async def close(self) -> None:
        await self.outbound.close()


def notices_for(settings: Settings) -> Notices:
    """The outbound path for the API's messages: the mail plane's, signed."""
    return Notices(outbound_for(settings), signer_for(settings))


async def older_domains(engine: AsyncEngine, domain: str) -> frozenset[str]:
    """Domains of addresses made before ``MASKMAIL_DOMAIN`` changed: they keep receiving."""
    async with transaction(engine, readonly=True) as conn:
        older = await relay_domains(conn, domain) - {domain.lower()}
    if older:
        log.info(
            "receiving for @%s (new addresses) and still for @%s, where older addresses live",
            domain,
            ", @".join(sorted(older)),
        )
    return older


@asynccontextmanager
async def mail_plane(
    settings: Settings,
    engine: AsyncEngine,
    *,
    host: str,
    port: int,
    on_started: Callable[[], None] = lambda: None,
    sockets: Listeners | None = None,
) -> AsyncIterator[Listening]:
    """The SMTP server, listening until the block ends; ``on_started`` runs once it
    listens (the entry point freezes the collector there). ``sockets`` are the listening
    sockets a worker of ``smtp --workers`` shares with the others."""
    outbound = outbound_for(settings)
    older = await older_domains(engine, settings.domain)
    rewriters = ThreadPoolExecutor(max_workers=2, thread_name_prefix="reply-rewrite")
    try:
        async with httpx.AsyncClient(timeout=RSPAMD_TIMEOUT) as client:
            context = MailContext(
                engine=engine,
                domain=settings.domain,
                older_domains=older,
                max_addresses_per_user=settings.max_addresses_per_user,
                first_mail_limits=OwnerLimits(
                    settings.first_mail_per_hour, settings.first_mail_max
                ),
                hostname=settings.mail_hostname,
                outbound=outbound,
                judge=SpamJudge(settings.trusted_relay_networks, settings.rspamd_url, client),
                bounce_secret=load_bounce_secret(settings),
                bounce_pause_threshold=settings.bounce_pause_threshold,
                pgp_timeout=settings.pgp_timeout,
                signer=signer_for(settings),
                authserv_ids=settings.authserv_id_list,
                rewriters=rewriters,
                kept_drivers=KEPT_DRIVERS,
                activity_days=settings.activity_days,
            )
            # Counts the last run delivered but could not write (mail/pending_counts.py).
            await replay(context.drivers, settings.data_dir, keep_days=settings.activity_days)
            server = await start_smtp(
                RelayHandler(context),
                host=host,
                port=port,
                hostname=settings.mail_hostname,
                max_message_size=settings.max_message_size,
                max_connections=settings.smtp_max_connections,
                max_per_client=settings.smtp_max_per_client,
                idle_timeout=settings.smtp_timeout,
                sock=None if sockets is None else sockets.smtp,
            )
            policy = None
            if settings.policy_port:
                policy = await start_policy(
                    context,
                    host=host,
                    port=settings.policy_port,
                    idle_timeout=settings.smtp_timeout,
                    sock=None if sockets is None else sockets.policy,
                )
            forgetting = asyncio.create_task(
                forget_old_activity(context.drivers, settings.activity_days)
            )
            on_started()
            try:
                yield server.server
            finally:
                forgetting.cancel()
                # An orderly stop (docs/operations.md): nothing new is accepted, the
                # requests and messages under way are answered, and the rest is closed.
                stops = [server.stop(CLOSE_TIMEOUT)]
                if policy is not None:
                    stops.append(policy.stop(CLOSE_TIMEOUT))
                await asyncio.gather(*stops)
                await asyncio.wait([forgetting])  # a delete under way rolls back
                # Once no message is under way: no count can be added after it.
                await context.pending_counts.stop(settings.data_dir)
                await outbound.close()
                await context.drivers.close()
    finally:
        rewriters.shutdown(wait=False, cancel_futures=True)
