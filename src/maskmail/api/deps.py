"""Request dependencies of the API: the settings and the caller behind the API key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, NoReturn

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.api.auth import bearer_token, raw_token
from maskmail.config import Settings
from maskmail.core.errors import Unauthorized
from maskmail.core.keys import hash_key
from maskmail.http_shared.connection import Conn
from maskmail.http_shared.forwarded import client_host
from maskmail.http_shared.public_url import server_url
from maskmail.http_shared.ratelimit import Limiter
from maskmail.store import accounts
from maskmail.store.accounts import Owner


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def _count_key(request: Request, read_token: Callable[[Request], str]) -> str:
    """The presented key's hash, after counting the request against that key's limit.

    Requests without a usable key count against the client's address instead, so a
    flood of bad keys is throttled too.
    """
    limiter: Limiter = request.app.state.limiter
    try:
        token = read_token(request)
    except Unauthorized as exc:
        await limiter.hit(f"anon:{client_host(request)}")
        raise where_to_get_a_key(request, exc.message) from None
    key_hash = hash_key(token)
    await limiter.hit(f"key:{key_hash}")
    # Read once more after the response, if it succeeded (api/key_use.py).
    request.state.key_hash = key_hash
    return key_hash


async def get_key_hash(request: Request) -> str:
    """From ``Authorization: Bearer <key>`` (the SPEC, and addy.io's contract)."""
    return await _count_key(request, lambda r: bearer_token(r.headers.get("authorization")))


async def get_raw_key_hash(request: Request) -> str:
    """From SimpleLogin's ``Authentication: <key>``, a header with no scheme."""
    return await _count_key(request, lambda r: raw_token(r.headers.get("authentication")))


KeyHash = Annotated[str, Depends(get_key_hash)]
RawKeyHash = Annotated[str, Depends(get_raw_key_hash)]


async def refuse_unknown_key(request: Request) -> NoReturn:
    """An unknown or revoked key also counts against the client's address."""
    await request.app.state.limiter.hit(f"anon:{client_host(request)}")
    raise where_to_get_a_key(request, "unknown or revoked API key")


def where_to_get_a_key(request: Request, why: str) -> Unauthorized:
    """A 401 that tells the person at the client where to get a key: the dashboard's API
    keys page on this relay, as their browser reaches it."""
    keys_page = f"{server_url(request)}/keys"
    return Unauthorized(f"{why}; create a key on the dashboard's API keys page, {keys_page}")


async def owner_of(request: Request, key_hash: str, conn: AsyncConnection) -> Owner:
    owner = await accounts.owner_for_key(conn, key_hash)
    if owner is None:
        await refuse_unknown_key(request)
    return owner


async def get_owner(request: Request, key_hash: KeyHash, conn: Conn) -> Owner:
    return await owner_of(request, key_hash, conn)


async def get_raw_key_owner(request: Request, key_hash: RawKeyHash, conn: Conn) -> Owner:
    return await owner_of(request, key_hash, conn)


CurrentOwner = Annotated[Owner, Depends(get_owner)]
RawKeyOwner = Annotated[Owner, Depends(get_raw_key_owner)]
CurrentSettings = Annotated[Settings, Depends(get_settings)]
