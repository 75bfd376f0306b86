"""The page a password reset link opens: a new password, twice. Opening it changes
nothing (a mail scanner that follows links burns no link); its form posts the token."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from maskmail.core.passwords import WeakPassword
from maskmail.http_shared.connection import Conn
from maskmail.http_shared.forwarded import client_host
from maskmail.services import password_reset
from maskmail.services.password_reset import LinkUnusable, PasswordsDiffer
from maskmail.web import csrf
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import read_form
from maskmail.web.render import page, sentence
from maskmail.web.sessions import clear_cookie

router = APIRouter(include_in_schema=False, route_class=PageRoute)

Token = Annotated[str, Query(max_length=128)]
DEAD = "This link is used, expired or unknown. Ask for a new one."


async def _count(request: Request) -> None:
    # The API's per-client budget for requests without a key (the mailbox link's too).
    await request.app.state.limiter.hit(f"anon:{client_host(request)}")


@router.get("/reset-password", name="show_reset_page")
async def show_reset_page(request: Request, conn: Conn, token: Token = "") -> Response:
    await _count(request)
    if not token or not await password_reset.link_is_live(conn, token):
        return page(request, "reset.html", None, dead=DEAD, status=404)
    return page(request, "reset.html", None, token=token)


@router.post("/reset-password")
async def reset_by_link(request: Request, conn: Conn) -> Response:
    csrf.check_origin(request)
    await _count(request)
    form = await read_form(request)
    token = str(form.get("token") or "")[:128]
    new, again = (str(form.get(name) or "") for name in ("new", "again"))
    try:
        await password_reset.reset_password(conn, token, new, again)
    except LinkUnusable:
        return page(request, "reset.html", None, dead=DEAD, status=404)
    except (PasswordsDiffer, WeakPassword) as exc:
        error = sentence(exc.message)
        return page(request, "reset.html", None, token=token, error=error, status=422)
    # Every session of the user has ended; this browser's cookie goes too.
    response = page(request, "reset.html", None, done=True)
    clear_cookie(request, response)
    return response
