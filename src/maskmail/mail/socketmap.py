"""Postfix's socketmap lookups (socketmap_table(5)), answered on the policy service's
port: which domains are users' verified custom domains. Postfix puts the map in
``relay_domains`` and ``transport_maps`` (docs/postfix.md), so it accepts and routes
mail for a domain from the moment it is verified, with no table to rebuild.

A request is one netstring (``<length>:<bytes>,``) holding ``<map> <key>``; the reply
is one netstring, ``OK <value>``, ``NOTFOUND `` or ``TEMP <reason>``. No maintained
Python library speaks it, and it is this small. A connection carries a request at a
time, as many as Postfix sends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from maskmail.core.envelope import normal_domain
from maskmail.core.errors import MaskmailError
from maskmail.mail import custom_domains
from maskmail.mail.context import MailContext
from maskmail.mail.policy_protocol import PolicyProtocolError

log = logging.getLogger(__name__)

MAP = "domains"
MAX_REQUEST = 1024  # "domains " and an address: far below this
_MAX_DIGITS = len(str(MAX_REQUEST))


def starts_request(first: bytes) -> bool:
    """A socketmap request starts with a digit; a policy request with a letter."""
    return first.isdigit()


def netstring(payload: bytes) -> bytes:
    return str(len(payload)).encode("ascii") + b":" + payload + b","


async def read_request(reader: asyncio.StreamReader, first: bytes) -> bytes:
    """The payload of the netstring whose first byte, a digit, was read already."""
    digits = first
    while (byte := await reader.readexactly(1)) != b":":
        if not byte.isdigit() or len(digits) >= _MAX_DIGITS:
            raise PolicyProtocolError("a socketmap request must start with its length")
        digits += byte
    size = int(digits)
    if size > MAX_REQUEST:
        raise PolicyProtocolError("a socketmap request is too long")
    payload = await reader.readexactly(size + 1)
    if payload[-1:] != b",":
        raise PolicyProtocolError("a socketmap request must end with ','")
    return payload[:-1]


async def lookup(ctx: MailContext, request: bytes) -> bytes:
    """The reply to one request. The key is a domain (``relay_domains``) or an address
    (``transport_maps``); the value found is the domain."""
    name, _, key = request.decode("utf-8", "replace").partition(" ")
    if name != MAP:
        return b"PERM no such map"
    domain = normal_domain(key.rpartition("@")[2])
    if not domain or domain.startswith("."):
        return b"NOTFOUND "
    try:
        held = await custom_domains.holder(ctx, domain)
    except MaskmailError:
        return b"TEMP the database is unavailable"
    return b"OK " + domain.encode("utf-8") if held is not None else b"NOTFOUND "


async def serve(
    ctx: MailContext,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    first: bytes,
    next_byte: Callable[[], Awaitable[bytes]],
    idle_timeout: float,
) -> None:
    """Answer requests until ``next_byte``, waiting for the next one, says the
    connection went quiet or away or the service stops."""
    while first:
        async with asyncio.timeout(idle_timeout):
            request = await read_request(reader, first)
        writer.write(netstring(await lookup(ctx, request)))
        async with asyncio.timeout(idle_timeout):
            await writer.drain()
        first = await next_byte()
