"""What the Two-factor pages share: the page itself, the recovery codes shown once, the
QR code of an app's enrolment, and the password check before a change that weakens it."""

from __future__ import annotations

from fastapi import Request
from markupsafe import Markup, escape
from segno import make as make_qr
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import Response

from maskmail.services import two_factor
from maskmail.services.two_factor import Enrolment
from maskmail.store import sessions
from maskmail.web import throttle
from maskmail.web.render import page
from maskmail.web.sessions import Viewer

WRONG_CODE = "That code is wrong, or was used already."


async def settings_page(
    request: Request,
    conn: AsyncConnection,
    viewer: Viewer,
    *,
    error: str = "",
    notice: str = "",
    status: int = 200,
) -> Response:
    found = await two_factor.status(conn, viewer.user_id)
    return page(
        request,
        "two_factor.html",
        viewer,
        status=status,
        error=error,
        notice=notice,
        state=found,
    )


def codes_page(request: Request, viewer: Viewer, codes: list[str]) -> Response:
    """The recovery codes, shown this once."""
    return page(request, "two_factor_codes.html", viewer, codes=codes)


def qr_svg(uri: str) -> Markup:
    """The enrolment link as a QR code, drawn here as inline SVG: no request leaves the
    page, and the CSP's img-src needs no exception."""
    svg = make_qr(uri, error="m").svg_inline(
        scale=5, dark="#000", light="#fff", svgclass="qr", lineclass=None, omitsize=False
    )
    label = escape("QR code of the authenticator app's setup link")
    return Markup(svg.replace("<svg ", f'<svg role="img" aria-label="{label}" ', 1))  # noqa: S704 - segno's markup, our escaped label


def totp_page(
    request: Request, viewer: Viewer, enrolment: Enrolment, *, error: str = "", status: int = 200
) -> Response:
    return page(
        request,
        "two_factor_totp.html",
        viewer,
        status=status,
        error=error,
        secret=enrolment.secret,
        qr=qr_svg(enrolment.uri),
    )


async def password_error(
    request: Request, conn: AsyncConnection, viewer: Viewer, password: str
) -> str:
    """An error for a throttled or wrong password, or "" when it is right. The sign-in
    throttle counts: a stolen session must not become a way to guess the password."""
    account = await sessions.account_for_user(conn, viewer.user_id)
    attempt = throttle.attempt(request, account.email)
    if await attempt.refused():
        return throttle.TOO_MANY
    if not await attempt.verify(account.password_hash, password):
        return "The password is wrong."
    return ""
