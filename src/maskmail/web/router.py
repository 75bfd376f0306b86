"""Every dashboard page and the dashboard's own files, for maskmail/app.py to mount.

Each page's router answers its own errors as pages (web/error_pages.py), so nothing is
installed on the app for them.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from maskmail.web import assets
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


def install(app: FastAPI) -> None:
    app.include_router(router)
    app.add_route("/favicon.ico", assets.favicon, include_in_schema=False)
    app.mount(assets.PATH, assets.files(), name="assets")
