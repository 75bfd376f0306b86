"""Signing in and out."""

from __future__ import annotations

from fastapi import APIRouter, Request
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import Response

from maskmail.http_shared.connection import Conn
from maskmail.services import two_factor
from maskmail.store import sessions
from maskmail.web import csrf, device_cookie, throttle
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import change, plain_text, read_form
from maskmail.web.pages.signup import signup_offered
from maskmail.web.render import back_to, page
from maskmail.web.sessions import (
    LIFETIME,
    PENDING_COOKIE,
    clear_cookie,
    hash_token,
    new_token,
    set_cookie,
)

router = APIRouter(include_in_schema=False, route_class=PageRoute)

WRONG = "Wrong email or password."


def sign_in_page(
    request: Request, *, email: str = "", error: str = "", status: int = 200
) -> Response:
    return page(
        request,
        "signin.html",
        None,
        email=email,
        error=error,
        status=status,
        signup=signup_offered(request),
    )


@router.post("/sign-in")
async def sign_in(request: Request, conn: Conn) -> Response:
    csrf.check_origin(request)
    form = await read_form(request)
    email = plain_text(form.get("email"), 320)
    password = str(form.get("password") or "")
    attempt = throttle.attempt(request, email)
    if await attempt.refused():
        return sign_in_page(request, email=email, error=throttle.TOO_MANY, status=429)
    account = await sessions.account_for_email(conn, email) if email else None
    stored = account.password_hash if account else None
    if not await attempt.verify(stored, password) or account is None:
        return sign_in_page(request, email=email, error=WRONG, status=401)
    # With two-factor on, the password only opens the second step (two_factor_signin.py).
    waiting = new_token()
    if await two_factor.begin_sign_in(conn, account.user_id, hash_token(waiting)):
        response = back_to(request, "/sign-in/second")
        set_cookie(
            request, response, waiting, name=PENDING_COOKIE, max_age=two_factor.PENDING_LIFETIME
        )
        return response
    return await signed_in(request, conn, account.user_id)


async def signed_in(request: Request, conn: AsyncConnection, user_id: int) -> Response:
    """Make the session and its cookie: the one place a sign-in ends, after the password
    or after the second step."""
    token = new_token()
    await sessions.start_session(conn, user_id, hash_token(token), lifetime=LIFETIME)
    response = back_to(request, "/")
    set_cookie(request, response, token)
    await device_cookie.note_sign_in(request, conn, response, user_id)
    return response


@router.post("/sign-out")
async def sign_out(request: Request, conn: Conn) -> Response:
    viewer, _ = await change(request, conn)
    await sessions.end_session(conn, viewer.token_hash)
    response = back_to(request, "/")
    clear_cookie(request, response)
    return response
