"""The Two-factor page: an authenticator app (TOTP), recovery codes, and turning
two-factor off. Security keys are two_factor_keys.py; the sign-in's second step is
two_factor_signin.py."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from maskmail.config import Settings
from maskmail.http_shared.connection import Conn
from maskmail.services import two_factor
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import change, plain_text, require_viewer
from maskmail.web.pages.two_factor_tries import TOO_MANY, tries
from maskmail.web.pages.two_factor_view import (
    WRONG_CODE,
    codes_page,
    password_error,
    settings_page,
    totp_page,
)
from maskmail.web.render import back_to

router = APIRouter(include_in_schema=False, route_class=PageRoute)


def _issuer(request: Request) -> str:
    settings: Settings = request.app.state.settings
    return f"maskmail ({settings.domain})"


@router.get("/two-factor")
async def show_two_factor(request: Request, conn: Conn) -> Response:
    viewer = await require_viewer(request, conn)
    return await settings_page(request, conn, viewer)


@router.post("/two-factor/totp")
async def start_totp(request: Request, conn: Conn) -> Response:
    viewer, _ = await change(request, conn)
    enrolment = await two_factor.start_totp(conn, viewer.user_id, viewer.email, _issuer(request))
    if enrolment is None:
        return back_to(request, "/two-factor")
    return totp_page(request, viewer, enrolment)


@router.post("/two-factor/totp/confirm")
async def confirm_totp(request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    enrolment = await two_factor.waiting_totp(conn, viewer.user_id, viewer.email, _issuer(request))
    if enrolment is None:
        return back_to(request, "/two-factor")
    counted = tries(request, viewer.user_id)
    if await counted.refused():
        return totp_page(request, viewer, enrolment, error=TOO_MANY, status=429)
    code = plain_text(form.get("code"), 64)
    codes = await two_factor.confirm_totp(conn, viewer.user_id, code, two_factor.now())
    if codes is None:
        await counted.failed()
        return totp_page(request, viewer, enrolment, error=WRONG_CODE, status=422)
    if codes:
        return codes_page(request, viewer, codes)
    return await settings_page(request, conn, viewer, notice="The authenticator app is on.")


@router.post("/two-factor/recovery")
async def new_recovery_codes(request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    error = await password_error(request, conn, viewer, str(form.get("password") or ""))
    if not error and not (await two_factor.status(conn, viewer.user_id)).on:
        error = "Turn two-factor on first."
    if error:
        return await settings_page(request, conn, viewer, error=error, status=422)
    return codes_page(request, viewer, await two_factor.new_recovery_codes(conn, viewer.user_id))


@router.post("/two-factor/off")
async def turn_off(request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    counted = tries(request, viewer.user_id)
    if await counted.refused():
        return await settings_page(request, conn, viewer, error=TOO_MANY, status=429)
    error = await password_error(request, conn, viewer, str(form.get("password") or ""))
    code = plain_text(form.get("code"), 64)
    if not error and not await two_factor.turn_off(conn, viewer.user_id, code, two_factor.now()):
        await counted.failed()
        error = WRONG_CODE
    if error:
        return await settings_page(request, conn, viewer, error=error, status=422)
    return await settings_page(request, conn, viewer, notice="Two-factor sign-in is off.")
