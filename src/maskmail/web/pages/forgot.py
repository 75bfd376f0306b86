""" "Forgot password?": the form that asks for the email, answered alike whether or not
an account has it; the link's message is made and sent after the answer
(services/password_reset.py)."""

from __future__ import annotations

import logging
from functools import lru_cache
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from limits import RateLimitItem, parse
from starlette.background import BackgroundTask
from starlette.responses import Response

from maskmail.config import Settings
from maskmail.http_shared.forwarded import client_host
from maskmail.http_shared.public_url import url_to
from maskmail.http_shared.ratelimit import Limiter
from maskmail.services import account_mail, password_reset
from maskmail.services.sending import Sender
from maskmail.web import csrf
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import plain_text, read_form
from maskmail.web.render import page

router = APIRouter(include_in_schema=False, route_class=PageRoute)
log = logging.getLogger(__name__)

# The route of the page the mailed link opens (pages/reset.py).
RESET_PAGE = "show_reset_page"
TOO_MANY = "Too many requests for a reset link; try again in an hour."


@lru_cache(maxsize=4)  # one rate a process; a few in tests
def _rate(text: str) -> RateLimitItem:
    return parse(text)


async def _allowed(request: Request, email: str) -> bool:
    """One request counted per client (behind the proxy, the address it forwards for)
    and per email asked for, whether or not an account has it, in the sign-in limits'
    storage (Redis when configured); False when either has used up its budget."""
    settings: Settings = request.app.state.settings
    limiter: Limiter = request.app.state.signin_limiter
    rate = _rate(settings.password_reset_rate_limit)
    for name in (f"reset:client:{client_host(request)}", f"reset:email:{email.lower()}"):
        if not await limiter.strategy.hit(rate, name):
            return False
    return True


@router.get("/forgot-password")
async def show_forgot(request: Request) -> Response:
    return page(request, "forgot.html", None)


@router.post("/forgot-password")
async def ask_for_link(request: Request) -> Response:
    csrf.check_origin(request)
    form = await read_form(request)
    email = plain_text(form.get("email"), 320)
    if "@" not in email:
        error = "Enter the email you sign in with."
        return page(request, "forgot.html", None, email=email, error=error, status=422)
    if not await _allowed(request, email):
        return page(request, "forgot.html", None, email=email, error=TOO_MANY, status=429)
    # The same page, whoever has the email: only the mailbox learns whether it exists.
    response = page(request, "forgot.html", None, sent=True)
    sender: Sender | None = request.app.state.outbound
    if sender is None:
        log.warning("a password reset was asked for, but this server sends no mail")
        return response
    engine, settings = request.app.state.engine, request.app.state.settings
    reset_page = url_to(request, RESET_PAGE)
    response.background = BackgroundTask(
        account_mail.start_soon,
        lambda: password_reset.mail_link(
            engine,
            settings,
            sender,
            email,
            lambda token: f"{reset_page}?{urlencode({'token': token})}",
        ),
        "password reset link",
    )
    return response
