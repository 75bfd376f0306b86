"""The sign-in's second step: a code from the app, a recovery code, or a security key.

The password step left only a waiting state (services/two_factor.py) named by its own
short-lived cookie; the session is made here, once, when the second step passes.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import Response

from maskmail.http_shared.connection import Conn
from maskmail.services import two_factor, two_factor_keys
from maskmail.services.two_factor import Step
from maskmail.web import csrf
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import plain_text, read_form
from maskmail.web.pages.signin import signed_in
from maskmail.web.pages.two_factor_keys import MAX_CREDENTIAL, NO_KEYS, relying_party
from maskmail.web.pages.two_factor_tries import TOO_MANY, tries
from maskmail.web.pages.two_factor_view import WRONG_CODE
from maskmail.web.render import back_to, page
from maskmail.web.sessions import PENDING_COOKIE, clear_cookie, hash_token

router = APIRouter(include_in_schema=False, route_class=PageRoute)

ENDED = "This sign-in has ended (too many tries, or too long). Sign in again."


def _waiting(request: Request) -> str | None:
    token = request.cookies.get(PENDING_COOKIE)
    return hash_token(token) if token and len(token) <= 128 else None


async def _page(
    request: Request,
    conn: AsyncConnection,
    token_hash: str,
    *,
    renew: bool,
    error: str = "",
    status: int = 200,
) -> Response:
    rp = relying_party(request)
    options = (
        await two_factor_keys.sign_in_options(conn, token_hash, rp, renew=renew) if rp else None
    )
    return page(
        request, "two_factor_signin.html", None, options=options, error=error, status=status
    )


def _ended(request: Request) -> Response:
    response = page(request, "signin.html", None, error=ENDED, status=401)
    clear_cookie(request, response, name=PENDING_COOKIE)
    return response


@router.get("/sign-in/second")
async def show_second_step(request: Request, conn: Conn) -> Response:
    token_hash = _waiting(request)
    if token_hash is None or await two_factor.waiting_user(conn, token_hash) is None:
        return back_to(request, "/")
    return await _page(request, conn, token_hash, renew=False)


async def _outcome(
    request: Request, conn: AsyncConnection, token_hash: str, outcome: tuple[Step, int | None]
) -> Response:
    step, user_id = outcome
    if step is Step.SIGNED_IN and user_id is not None:
        response = await signed_in(request, conn, user_id)
        clear_cookie(request, response, name=PENDING_COOKIE)
        return response
    if user_id is not None:
        await tries(request, user_id).failed()
    if step is Step.ENDED:
        return _ended(request)
    return await _page(request, conn, token_hash, renew=True, error=WRONG_CODE, status=401)


async def _refused(request: Request, conn: AsyncConnection, token_hash: str) -> Response | None:
    """The answer when this sign-in is over or throttled; None to go on."""
    user_id = await two_factor.waiting_user(conn, token_hash)
    if user_id is None:
        return _ended(request)
    if await tries(request, user_id).refused():
        return await _page(request, conn, token_hash, renew=True, error=TOO_MANY, status=429)
    return None


@router.post("/sign-in/second")
async def second_step(request: Request, conn: Conn) -> Response:
    csrf.check_origin(request)
    form = await read_form(request)
    token_hash = _waiting(request)
    if token_hash is None:
        return _ended(request)
    if (refused := await _refused(request, conn, token_hash)) is not None:
        return refused
    code = plain_text(form.get("code"), 64)
    outcome = await two_factor.second_step(conn, token_hash, code, two_factor.now())
    return await _outcome(request, conn, token_hash, outcome)


@router.post("/sign-in/second/key")
async def second_step_key(request: Request, conn: Conn) -> Response:
    csrf.check_origin(request)
    form = await read_form(request)
    token_hash = _waiting(request)
    rp = relying_party(request)
    if token_hash is None:
        return _ended(request)
    if (refused := await _refused(request, conn, token_hash)) is not None:
        return refused
    if rp is None:
        return await _page(request, conn, token_hash, renew=True, error=NO_KEYS, status=422)
    credential = form.get("credential")
    if not isinstance(credential, str) or len(credential) > MAX_CREDENTIAL:
        credential = ""
    outcome = await two_factor_keys.sign_in_with_key(conn, token_hash, credential, rp)
    return await _outcome(request, conn, token_hash, outcome)
