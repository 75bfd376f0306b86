"""Security keys and passkeys on the Two-factor page: name one, touch it, remove it.

The relying party id is ``MASKMAIL_WEBAUTHN_RP_ID``, else the host name the browser
opened the dashboard at (through a trusted proxy's X-Forwarded-Host); browsers refuse
an IP address, so on one the page says keys need a host name. The browser's side is
``static/two_factor.js``: it fills a form's hidden field with the key's answer and
submits the form, so every answer is an ordinary page.
"""

from __future__ import annotations

import ipaddress

from fastapi import APIRouter, Request
from starlette.responses import Response

from maskmail.config import Settings
from maskmail.http_shared.connection import Conn
from maskmail.http_shared.public_url import site_url
from maskmail.services import two_factor_keys
from maskmail.services.two_factor_keys import RelyingParty
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import change, path_id, plain_text
from maskmail.web.pages.two_factor_view import codes_page, password_error, settings_page
from maskmail.web.render import back_to, page

router = APIRouter(include_in_schema=False, route_class=PageRoute)

NO_KEYS = "Security keys need the dashboard at a host name, not an IP address."
MAX_CREDENTIAL = 16_384


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def relying_party(request: Request) -> RelyingParty | None:
    """Who keys are registered to and answer, or None on an IP address."""
    settings: Settings = request.app.state.settings
    url = site_url(request)
    host = settings.webauthn_rp_id or (url.hostname or "").lower()
    if not host or _is_ip(host):
        return None
    return RelyingParty(rp_id=host, origin=f"{url.scheme}://{url.netloc}")


@router.post("/two-factor/keys/new")
async def new_key(request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    name = two_factor_keys.clean_name(plain_text(form.get("name"), 200))
    rp = relying_party(request)
    if rp is None:
        return await settings_page(request, conn, viewer, error=NO_KEYS, status=422)
    if not name:
        return await settings_page(request, conn, viewer, error="Name the key.", status=422)
    options = await two_factor_keys.registration_options(
        conn, viewer.user_id, viewer.email, viewer.token_hash, rp
    )
    if options is None:
        limit = f"You have {two_factor_keys.MAX_KEYS} keys, the most an account may have."
        return await settings_page(request, conn, viewer, error=limit, status=403)
    return page(request, "two_factor_key.html", viewer, name=name, options=options)


@router.post("/two-factor/keys")
async def add_key(request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    name = plain_text(form.get("name"), 200)
    credential = form.get("credential")
    rp = relying_party(request)
    if rp is None:
        return await settings_page(request, conn, viewer, error=NO_KEYS, status=422)
    if not isinstance(credential, str) or not credential or len(credential) > MAX_CREDENTIAL:
        credential = "{}"
    codes = await two_factor_keys.register(
        conn, viewer.user_id, viewer.token_hash, credential, name, rp
    )
    if codes is None:
        refused = "The key was not added: its answer did not check out, or took too long."
        return await settings_page(request, conn, viewer, error=refused, status=422)
    if codes:
        return codes_page(request, viewer, codes)
    return back_to(request, "/two-factor")


@router.post("/two-factor/keys/{key_id}/delete")
async def remove_key(key_id: str, request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    found = path_id(key_id, viewer)
    error = await password_error(request, conn, viewer, str(form.get("password") or ""))
    if not error and not await two_factor_keys.remove(conn, viewer.user_id, found):
        error = "This is your last second factor: turn two-factor off below instead."
    if error:
        return await settings_page(request, conn, viewer, error=error, status=422)
    return back_to(request, "/two-factor")
