"""Signing up (docs/dashboard.md, "Sign-up"): the form, the code that verifies the first
mailbox, and the page the mailed link opens.

No session yet, so the forms are checked by their origin, as signing in is, and each
sign-up counts per client (behind the trusted proxy) and per address before anything is
looked up. The page after the form is the same whether or not the address has an
account (services/signup.py says why and how).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from maskmail.config import Settings
from maskmail.core.errors import MaskmailError, RateLimited
from maskmail.core.invitations import invalid as invitation_invalid
from maskmail.core.passwords import WeakPassword
from maskmail.core.signup import Mode
from maskmail.http_shared.connection import Conn
from maskmail.http_shared.forwarded import client_host
from maskmail.http_shared.problems import problem
from maskmail.http_shared.public_url import url_to
from maskmail.services import invitations, signup
from maskmail.web import csrf
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import REFUSALS, plain_text, read_form
from maskmail.web.render import page, sentence

router = APIRouter(include_in_schema=False, route_class=PageRoute)

Token = Annotated[str, Query(max_length=128)]
VERIFY_ROUTE = "show_sign_up_link"
# The sign-up form's refusals, shown on the form; the rest are error pages.
_SHOWN = (*REFUSALS, WeakPassword)


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def signup_offered(request: Request) -> bool:
    """Whether the sign-in page links to sign-up: not when it is closed."""
    return signup.mode(_settings(request)) is not Mode.CLOSED


def _form(
    request: Request,
    mode: Mode,
    *,
    invite: str = "",
    email: str = "",
    error: str = "",
    status: int = 200,
) -> Response:
    return page(
        request,
        "signup.html",
        None,
        invite_mode=mode is Mode.INVITE,
        invite=invite,
        email=email,
        error=error,
        status=status,
    )


def _sent(
    request: Request, *, email: str, ticket: str, error: str = "", status: int = 200
) -> Response:
    return page(
        request, "signup_sent.html", None, email=email, ticket=ticket, error=error, status=status
    )


def _refused(exc: MaskmailError) -> tuple[str, int]:
    return sentence(exc.message), problem(exc).status


@router.get("/sign-up")
async def show_sign_up(request: Request, conn: Conn, invite: Token = "") -> Response:
    mode = signup.check_open(_settings(request))
    invite = plain_text(invite, 128)
    if mode is Mode.INVITE and invite and not await invitations.is_open(conn, invite):
        message, status = _refused(invitation_invalid())
        return _form(request, mode, invite=invite, error=message, status=status)
    return _form(request, mode, invite=invite)


@router.post("/sign-up")
async def sign_up(request: Request, conn: Conn) -> Response:
    mode = signup.check_open(_settings(request))
    csrf.check_origin(request)
    form = await read_form(request)
    email = plain_text(form.get("email"), 320)
    invite = plain_text(form.get("invite"), 128)
    password = str(form.get("password") or "")
    limiter = request.app.state.signup_limiter
    try:
        # Per client and per address, before anything is looked up by the address.
        await limiter.hit(f"signup:client:{client_host(request)}")
        await limiter.hit(f"signup:address:{email.lower()}")
        async with conn.begin_nested():
            ticket = await signup.sign_up(
                conn,
                _settings(request),
                email=email,
                password=password,
                invite=invite,
                sender=request.app.state.outbound,
                links=signup.Links(
                    verify=lambda token: url_to(request, VERIFY_ROUTE, token=token),
                    sign_in=url_to(request, "home"),
                ),
            )
    except _SHOWN as exc:
        message, status = _refused(exc)
        response = _form(request, mode, invite=invite, email=email, error=message, status=status)
        if isinstance(exc, RateLimited):
            response.headers["Retry-After"] = str(exc.retry_after)
        return response
    return _sent(request, email=email, ticket=ticket)


@router.post("/sign-up/code")
async def sign_up_code(request: Request, conn: Conn) -> Response:
    signup.check_open(_settings(request))
    csrf.check_origin(request)
    form = await read_form(request)
    ticket = plain_text(form.get("ticket"), 128)
    email = plain_text(form.get("email"), 320)
    code = plain_text(form.get("code"), 32)
    try:
        async with conn.begin_nested():
            await signup.confirm_code(conn, ticket, code, limiter=request.app.state.code_limiter)
    except REFUSALS as exc:
        message, status = _refused(exc)
        return _sent(request, email=email, ticket=ticket, error=message, status=status)
    return page(request, "signup_done.html", None)


@router.get("/sign-up/verify", name=VERIFY_ROUTE)
async def show_sign_up_link(request: Request, token: Token) -> Response:
    """Opening the link changes nothing (a mail scanner may follow it); its button
    posts the token."""
    signup.check_open(_settings(request))
    await request.app.state.limiter.hit(f"anon:{client_host(request)}")
    return page(request, "signup_verify.html", None, token=token)


@router.post("/sign-up/verify")
async def sign_up_link(request: Request, conn: Conn) -> Response:
    signup.check_open(_settings(request))
    csrf.check_origin(request)
    await request.app.state.limiter.hit(f"anon:{client_host(request)}")
    form = await read_form(request)
    await signup.confirm_link(conn, plain_text(form.get("token"), 128))
    return page(request, "signup_done.html", None)
