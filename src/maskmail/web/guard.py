"""Who may see a page, and whether a change really comes from our own page."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.datastructures import FormData

from maskmail.core.descriptions import is_control
from maskmail.core.errors import (
    AddressNotFound,
    DeliveryDeferred,
    DeliveryRefused,
    InvalidAddress,
    LimitReached,
    MaskmailError,
    RateLimited,
    ToolUnavailable,
)
from maskmail.core.records import MAX_ID, RelayAddress
from maskmail.http_shared.problems import problem
from maskmail.store import addresses as store
from maskmail.store import sessions
from maskmail.web import csrf
from maskmail.web.render import sentence
from maskmail.web.sessions import COOKIE, Viewer, csrf_of, hash_token

T = TypeVar("T")

# The dashboard's forms have a handful of short fields, or a box per mailbox (the API
# takes at most 100 mailbox ids).
MAX_FIELDS = 110


async def viewer_of(request: Request, conn: AsyncConnection) -> Viewer | None:
    """The live session named by the cookie, read on every request, or None."""
    token = request.cookies.get(COOKIE)
    if not token or len(token) > 128:
        return None
    token_hash = hash_token(token)
    found = await sessions.session_user(conn, token_hash)
    if found is None:
        return None
    user_id, email, is_admin = found
    return Viewer(user_id, email, token_hash, csrf_of(token), is_admin)


async def read_form(request: Request) -> FormData:
    return await request.form(max_files=0, max_fields=MAX_FIELDS)


class SignInNeeded(Exception):
    """No live session: the answer is the sign-in page."""


class PageNotFound(Exception):
    """Nothing of the viewer's at this path (another user's id included): a 404 page."""

    def __init__(self, viewer: Viewer | None) -> None:
        super().__init__("no such page")
        self.viewer = viewer


async def require_viewer(request: Request, conn: AsyncConnection) -> Viewer:
    viewer = await viewer_of(request, conn)
    if viewer is None:
        raise SignInNeeded
    return viewer


async def change(request: Request, conn: AsyncConnection) -> tuple[Viewer, FormData]:
    """The viewer and form of a state-changing request; csrf.Forbidden for another
    site's request, SignInNeeded without a session."""
    csrf.check_origin(request)
    viewer = await require_viewer(request, conn)
    form = await read_form(request)
    csrf.check(request, form, viewer.csrf)
    return viewer, form


def path_id(text: str, viewer: Viewer) -> int:
    """An id from the path; anything else names nothing of the viewer's."""
    if not text.isascii() or not text.isdigit() or len(text) > 19 or not 1 <= int(text) <= MAX_ID:
        raise PageNotFound(viewer)
    return int(text)


async def owned_address(conn: AsyncConnection, viewer: Viewer, text: str) -> RelayAddress:
    """The viewer's address with the id in ``text``; anyone else's is a 404, as in the API."""
    try:
        return await store.get_address(conn, viewer.user_id, path_id(text, viewer))
    except AddressNotFound as exc:
        raise PageNotFound(viewer) from exc


def plain_text(value: object, limit: int) -> str:
    """A short one-line field (an email, a search) without control characters, which no
    email or description contains and PostgreSQL refuses (NUL)."""
    text = value if isinstance(value, str) else ""
    return "".join(c for c in text[: limit * 2] if not is_control(c)).strip()[:limit]


def switch(form: FormData, field: str) -> bool:
    """An on/off form field ("true" or "false"); anything else is refused, as the API's
    strict booleans are."""
    value = {"true": True, "false": False}.get(str(form.get(field)))
    if value is None:
        raise InvalidAddress("choose on or off", {"field": field})
    return value


# Errors the person can act on (fix the input, wait, try later): shown on the page.
REFUSALS = (
    InvalidAddress,
    LimitReached,
    RateLimited,
    DeliveryDeferred,
    DeliveryRefused,
    ToolUnavailable,
)


@dataclass(frozen=True, slots=True)
class Refused:
    """A change the store refused: the API's message and status for it."""

    message: str
    status: int


async def attempt(
    conn: AsyncConnection, viewer: Viewer, work: Callable[[], Awaitable[T]]
) -> T | Refused:
    """Run a change in a savepoint, so that a refused one leaves nothing behind while the
    page still answers; anything of another user's is the 404 page, as in the API."""
    try:
        async with conn.begin_nested():
            return await work()
    except AddressNotFound as exc:
        raise PageNotFound(viewer) from exc
    except REFUSALS as exc:
        return refusal(exc)


def refusal(exc: MaskmailError) -> Refused:
    """The API's message, written as a sentence, and the API's status."""
    return Refused(sentence(exc.message), problem(exc).status)
