"""The Postfix policy service: Postfix asks, at RCPT, what maskmail would answer.

With it, Postfix refuses unknown relay addresses, unknown reverse aliases, forged bounce
addresses and strangers writing to a reverse alias while the sender is still connected,
so it never accepts mail it would later have to bounce (backscatter). The answer comes
from ``recipients.check_may_receive``, the rule the SMTP handler applies at RCPT. The
same port answers Postfix's socketmap lookups of users' custom domains
(``mail/socketmap.py``).
"""

from __future__ import annotations

import asyncio
import logging
import socket

from maskmail.core.errors import MaskmailError
from maskmail.mail import recipients, smtp_replies, socketmap
from maskmail.mail.context import MailContext
from maskmail.mail.draining import OpenConnections
from maskmail.mail.policy_protocol import (
    MAX_LINE,
    PolicyProtocolError,
    answer,
    read_request,
)
from maskmail.startup import inherited_socket, listen_failure

log = logging.getLogger(__name__)

PERMIT = "DUNNO"  # not ours to allow: the next restriction in Postfix decides
# A 4xx of ours: refuse for now, unless a later restriction refuses for good.
DEFER = "DEFER_IF_PERMIT 4.3.0 Temporary failure; try again later"
DECISION_TIMEOUT = 30.0  # Postfix waits 100 s (smtpd_policy_service_timeout)
MAX_CONNECTIONS = 200  # each smtpd process keeps one; Postfix runs 100 by default


def action_for(line: str) -> str:
    """The policy action for one of the SMTP handler's reply lines."""
    if line.startswith("2"):
        return PERMIT
    if line.startswith("4"):
        text = line.partition(" ")[2]
        return f"DEFER_IF_PERMIT {text}" if text else DEFER
    return line  # "550 5.1.1 ...": Postfix replies with exactly this


async def decide(ctx: MailContext, request: dict[str, str]) -> str:
    """The action for one request: maskmail's RCPT answer for its own recipients,
    DUNNO for every other question (other domains, other protocol stages)."""
    if request.get("request") != "smtpd_access_policy":
        return PERMIT
    if request.get("protocol_state", "").upper() != "RCPT":
        return PERMIT
    recipient = request.get("recipient", "")
    if not await recipients.receives(ctx, recipient):
        return PERMIT
    try:
        async with asyncio.timeout(DECISION_TIMEOUT):
            await recipients.check_may_receive(ctx, recipient, request.get("sender", ""))
    except MaskmailError as exc:
        return action_for(smtp_replies.reply_for(exc))
    except TimeoutError:
        log.warning("policy decision took longer than %.0f s; deferring", DECISION_TIMEOUT)
        return DEFER
    return PERMIT


class PolicyServer:
    """Serves each Postfix connection's requests in turn, until it goes quiet or away,
    or the service stops."""

    def __init__(self, ctx: MailContext, *, idle_timeout: float) -> None:
        self.ctx = ctx
        self.idle_timeout = idle_timeout
        self.connections = OpenConnections()
        self.stopping = False
        self.idle: set[asyncio.StreamWriter] = set()
        self.listener: asyncio.Server | None = None

    async def stop(self, grace: float) -> None:
        """Stop accepting and close every connection between requests, so that Postfix
        reconnects on its next lookup (its socketmap and policy clients retry a closed
        connection once); a request being answered is answered first, for up to
        ``grace`` seconds."""
        self.stopping = True
        if self.listener is not None:
            self.listener.close()
        for writer in list(self.idle):
            writer.close()
        await self.connections.ended(grace)

    async def _next_byte(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, first: bool = False
    ) -> bytes:
        """The first byte of the next request; b"" when the client or the service is
        done. The connection is idle while it waits, and a stop closes it then. A
        connection accepted before the stop has its request answered: Postfix connected
        to send one, and retries only once."""
        if self.stopping and not first:
            return b""
        self.idle.add(writer)
        try:
            async with asyncio.timeout(self.idle_timeout):
                return await reader.read(1)
        finally:
            self.idle.discard(writer)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.connections.count >= MAX_CONNECTIONS:
            writer.close()
            return
        self.connections.opened()
        try:
            await self._requests(reader, writer)
        except PolicyProtocolError as exc:
            log.warning("policy client broke the protocol: %s", exc)
        except (TimeoutError, ConnectionError):
            pass  # idle or gone: Postfix reconnects when it next asks
        except Exception:
            # Never a traceback to the client; the connection closes and Postfix, having
            # no answer, applies its default action (451 4.3.5).
            log.exception("unexpected error in the policy service")
        finally:
            self.connections.closed()
            writer.close()

    async def _requests(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # The port also answers Postfix's socketmap lookups (mail/socketmap.py): the
        # first byte tells the two protocols apart.
        first = await self._next_byte(reader, writer, first=True)
        if socketmap.starts_request(first):
            await socketmap.serve(
                self.ctx,
                reader,
                writer,
                first,
                lambda: self._next_byte(reader, writer),
                self.idle_timeout,
            )
            return
        while first:
            async with asyncio.timeout(self.idle_timeout):
                request = await read_request(reader, first)
            if request is None:
                return
            try:
                action = await decide(self.ctx, request)
            except Exception:
                log.exception("policy decision failed; deferring")
                action = DEFER
            writer.write(answer(action))
            async with asyncio.timeout(self.idle_timeout):
                await writer.drain()
            first = await self._next_byte(reader, writer)


async def start_policy(
    ctx: MailContext,
    *,
    host: str,
    port: int,
    idle_timeout: float,
    sock: socket.socket | None = None,
) -> PolicyServer:
    """Listen for Postfix's ``check_policy_service inet:host:port``: on ``sock`` when
    given (``smtp --workers`` shares one), else on the socket systemd passed for that port."""
    server = PolicyServer(ctx, idle_timeout=idle_timeout)
    inherited = sock or inherited_socket(port)
    try:
        if inherited is not None:
            server.listener = await asyncio.start_server(
                server.serve, sock=inherited, limit=MAX_LINE
            )
        else:
            server.listener = await asyncio.start_server(
                server.serve, host=host, port=port, limit=MAX_LINE
            )
    except OSError as exc:
        raise listen_failure(exc, host, port, "the policy service", "--policy-port") from exc
    return server
