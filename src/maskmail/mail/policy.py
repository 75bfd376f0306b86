"""The Postfix policy service: Postfix asks, at RCPT, what maskmail would answer.

With it, Postfix refuses unknown relay addresses, unknown reverse aliases, forged bounce
addresses and strangers writing to a reverse alias while the sender is still connected,
so it never accepts mail it would later have to bounce (backscatter). The answer comes
from ``recipients.check_recipient``, the rule the SMTP handler applies at RCPT. The
same port answers Postfix's socketmap lookups of users' custom domains
(``mail/socketmap.py``).
"""

from __future__ import annotations

import asyncio
import logging

from maskmail.core.errors import MaskmailError
from maskmail.mail import recipients, replies, socketmap
from maskmail.mail.context import MailContext
from maskmail.mail.policy_protocol import (
    MAX_LINE,
    PolicyProtocolError,
    answer,
    read_request,
)

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
            await recipients.check_recipient(ctx, recipient, request.get("sender", ""))
    except MaskmailError as exc:
        return action_for(replies.reply_for(exc))
    except TimeoutError:
        log.warning("policy decision took longer than %.0f s; deferring", DECISION_TIMEOUT)
        return DEFER
    return PERMIT


class PolicyServer:
    """Serves each Postfix connection's requests in turn, until it goes quiet or away."""

    def __init__(self, ctx: MailContext, *, idle_timeout: float) -> None:
        self.ctx = ctx
        self.idle_timeout = idle_timeout
        self.open = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.open >= MAX_CONNECTIONS:
            writer.close()
            return
        self.open += 1
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
            self.open -= 1
            writer.close()

    async def _requests(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # The port also answers Postfix's socketmap lookups (mail/socketmap.py): the
        # first byte tells the two protocols apart.
        async with asyncio.timeout(self.idle_timeout):
            first = await reader.read(1)
        if socketmap.starts_request(first):
            await socketmap.serve(self.ctx, reader, writer, first, self.idle_timeout)
            return
        while True:
            async with asyncio.timeout(self.idle_timeout):
                request = await read_request(reader, first)
                first = b""
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


async def start_policy(
    ctx: MailContext, *, host: str, port: int, idle_timeout: float
) -> asyncio.Server:
    """Listen for Postfix's ``check_policy_service inet:host:port``."""
    server = PolicyServer(ctx, idle_timeout=idle_timeout)
    return await asyncio.start_server(server.serve, host=host, port=port, limit=MAX_LINE)
