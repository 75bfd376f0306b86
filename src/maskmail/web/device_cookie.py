"""The device cookie a successful sign-in leaves, and the notice it may mail
(services/devices.py says what counts as a new device)."""

from __future__ import annotations

from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.background import BackgroundTask
from starlette.responses import Response

from maskmail.http_shared.forwarded import client_host
from maskmail.services import account_mail, devices
from maskmail.services.sending import Sender
from maskmail.web.render import root
from maskmail.web.sessions import is_https

COOKIE = "maskmail_device"


async def note_sign_in(
    request: Request, conn: AsyncConnection, response: Response, user_id: int
) -> None:
    """Remember the browser for the user; mail them if it is new to them (after the
    answer: the page does not wait for the smarthost)."""
    seen = await devices.sign_in_from(
        conn,
        request.app.state.settings,
        user_id,
        cookie=request.cookies.get(COOKIE),
        client=client_host(request),
        user_agent=request.headers.get("user-agent", "")[:512],
    )
    response.set_cookie(
        COOKIE,
        seen.token,
        max_age=devices.COOKIE_LIFETIME,
        path=root(request) or "/",
        httponly=True,
        samesite="lax",
        secure=is_https(request),
    )
    sender: Sender | None = request.app.state.outbound
    if seen.notice is not None and sender is not None:
        message, mailbox = seen.notice
        response.background = BackgroundTask(
            account_mail.start_soon,
            lambda: account_mail.deliver(sender, message, mailbox),
            "sign-in notice",
        )
