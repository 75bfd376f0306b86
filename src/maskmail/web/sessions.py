"""The session cookie: made at sign-in, read on every page, ended at sign-out."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from fastapi import Request
from starlette.responses import Response

from maskmail.http_shared.public_url import site_url

COOKIE = "maskmail_session"
LIFETIME = 14 * 86_400
# A sign-in waiting for its second step (services/two_factor.py): its own cookie, which
# names no session and lives as long as the waiting state.
PENDING_COOKIE = "maskmail_pending"


@dataclass(frozen=True, slots=True)
class Viewer:
    """The signed-in person behind a request."""

    user_id: int
    email: str
    token_hash: str
    # Derived from the secret token, so it is never stored and needs no lookup.
    csrf: str
    # Read with the session (the header's Admin link); the admin pages ask again.
    is_admin: bool = False


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("ascii", "replace")).hexdigest()


def csrf_of(token: str) -> str:
    # 128 bits: unguessable, and short, since every form of a page carries it.
    return hashlib.sha256(b"csrf:" + token.encode("ascii", "replace")).hexdigest()[:32]


def new_token() -> str:
    return secrets.token_urlsafe(32)


def is_https(request: Request) -> bool:
    """Over HTTPS, directly or as a trusted proxy's X-Forwarded-Proto says."""
    return site_url(request).scheme == "https"


def set_cookie(
    request: Request,
    response: Response,
    token: str,
    *,
    name: str = COOKIE,
    max_age: int = LIFETIME,
) -> None:
    response.set_cookie(
        name,
        token,
        max_age=max_age,
        path=request.scope.get("root_path", "") or "/",
        httponly=True,
        samesite="lax",
        secure=is_https(request),
    )


def clear_cookie(request: Request, response: Response, *, name: str = COOKIE) -> None:
    response.delete_cookie(
        name,
        path=request.scope.get("root_path", "") or "/",
        httponly=True,
        samesite="lax",
        secure=is_https(request),
    )
