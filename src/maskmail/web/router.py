"""Every dashboard page and the dashboard's own files, for maskmail/app.py to mount."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request
from starlette.responses import Response

from maskmail.web import assets, csrf
from maskmail.web.guard import PageNotFound, SignInNeeded
from maskmail.web.pages import (
    activity,
    address,
    addresses,
    domains,
    help,
    keys,
    mailbox_keys,
    mailboxes,
    password,
    signin,
    subdomain,
)
from maskmail.web.render import back_to, forbidden, not_found

router = APIRouter(include_in_schema=False)
for pages in (
    signin,
    addresses,
    address,
    activity,
    mailboxes,
    mailbox_keys,
    subdomain,
    domains,
    keys,
    password,
    help,
):
    router.include_router(pages.router)


async def _forbidden(request: Request, exc: Exception) -> Response:
    return forbidden(request)


async def _sign_in_first(request: Request, exc: Exception) -> Response:
    return back_to(request, "/")


async def _not_found(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, PageNotFound)
    return not_found(request, exc.viewer)


def install(app: FastAPI) -> None:
    app.include_router(router)
    app.mount(assets.PATH, assets.files(), name="assets")
    app.add_exception_handler(csrf.Forbidden, _forbidden)
    app.add_exception_handler(SignInNeeded, _sign_in_first)
    app.add_exception_handler(PageNotFound, _not_found)
