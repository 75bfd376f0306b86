"""Postfix's SMTPD access policy delegation protocol, read and written with limits.

A request is ``name=value`` lines ending in an empty line; the answer is one
``action=...`` line and an empty line, and the connection may carry more requests.
No maintained Python library speaks it, and it is this small. Every limit here is far
above what Postfix sends (about 30 short attributes) and far below what would hurt.
"""

from __future__ import annotations

import asyncio

MAX_LINE = 4096  # bytes, newline included; Postfix's longest values are TLS subjects
MAX_ATTRIBUTES = 100


class PolicyProtocolError(Exception):
    """The peer broke the protocol; the connection is closed without an answer."""


def parse_line(line: bytes) -> tuple[str, str]:
    """One ``name=value`` line, without its newline; the value may hold any text."""
    name, sep, value = line.partition(b"=")
    if not sep or not name:
        raise PolicyProtocolError("an attribute line needs a name and '='")
    if not name.isascii() or not name.replace(b"_", b"").isalnum():
        raise PolicyProtocolError("an attribute name must be ASCII letters, digits or '_'")
    # Addresses may be UTF-8 (SMTPUTF8); anything that is not becomes U+FFFD, which no
    # address of ours contains, rather than a lone surrogate nothing could store.
    return name.decode("ascii").lower(), value.decode("utf-8", "replace")


async def read_request(reader: asyncio.StreamReader, prefix: bytes = b"") -> dict[str, str] | None:
    """The next request's attributes, or None when the peer closed between requests.

    The reader must be made with ``limit=MAX_LINE``. A repeated name keeps its last
    value, as Postfix's own readers do.
    """
    attributes: dict[str, str] = {}
    lines = 0
    while True:
        try:
            line = await reader.readuntil(b"\n")
            if prefix:
                line, prefix = prefix + line, b""
        except asyncio.IncompleteReadError as exc:
            if not exc.partial and not lines:
                return None
            raise PolicyProtocolError("the connection closed inside a request") from exc
        except asyncio.LimitOverrunError as exc:
            raise PolicyProtocolError("an attribute line is too long") from exc
        line = line.rstrip(b"\n").removesuffix(b"\r")
        if not line:
            if not lines:
                raise PolicyProtocolError("an empty request")
            return attributes
        lines += 1
        if lines > MAX_ATTRIBUTES:
            raise PolicyProtocolError("too many attributes")
        name, value = parse_line(line)
        attributes[name] = value


def answer(action: str) -> bytes:
    """The reply to one request; ``action`` is one line (DUNNO, an SMTP reply, ...)."""
    if "\n" in action or "\r" in action or not action:
        raise ValueError("a policy action is one non-empty line")
    return f"action={action}\n\n".encode()
