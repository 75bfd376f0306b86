"""Reading the caller's API key from the Authorization header."""

from __future__ import annotations

from maskmail.core.errors import Unauthorized


def bearer_token(header: str | None) -> str:
    """The token of ``Bearer <token>``; the scheme is case-insensitive (RFC 9110)."""
    if not header:
        raise Unauthorized("missing Authorization header; send 'Authorization: Bearer <API key>'")
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        raise Unauthorized("unsupported authorization scheme; use 'Bearer <API key>'")
    token = token.strip()
    if not token or any(c.isspace() for c in token):
        raise Unauthorized("malformed bearer token")
    return token
