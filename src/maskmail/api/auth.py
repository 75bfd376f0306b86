"""Reading the caller's API key from the request headers."""

from __future__ import annotations

import re

from maskmail.core.errors import Unauthorized
from maskmail.core.keys import MAX_HEADER_CHARS

# Any character str.isspace() calls whitespace (re's \s for str is the same set).
_SPACE = re.compile(r"\s")


def _bounded(header: str) -> str:
    if len(header) > MAX_HEADER_CHARS:
        raise Unauthorized("malformed API key: the header is too long")
    return header


def bearer_token(header: str | None) -> str:
    """The token of ``Bearer <token>``; the scheme is case-insensitive (RFC 9110)."""
    if not header:
        raise Unauthorized("missing Authorization header; send 'Authorization: Bearer <API key>'")
    scheme, _, token = _bounded(header).strip().partition(" ")
    if scheme.lower() != "bearer":
        raise Unauthorized("unsupported authorization scheme; use 'Bearer <API key>'")
    token = token.strip()
    if not token or _SPACE.search(token):
        raise Unauthorized("malformed API key; send 'Authorization: Bearer <API key>'")
    return token


def raw_token(header: str | None) -> str:
    """The key of SimpleLogin's ``Authentication: <key>``; a ``Bearer`` scheme is tolerated."""
    if not header or not header.strip():
        raise Unauthorized("missing Authentication header; send 'Authentication: <API key>'")
    value = _bounded(header).strip()
    scheme, _, rest = value.partition(" ")
    if scheme.lower() == "bearer":
        value = rest.strip()
    if not value or _SPACE.search(value):
        raise Unauthorized("malformed Authentication header; send 'Authentication: <API key>'")
    return value
