"""Every dashboard page and the dashboard's own files, for maskmail/app.py to mount.

Each page's router answers its own errors as pages (web/error_pages.py); the errors no
route answers are handed to ``outside_routes`` by the composition (maskmail/app.py).
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from maskmail.web import assets, form_pages
from maskmail.web.error_pages import outside_routes
from maskmail.web.pages import (
    activity,
    address,
    addresses,
    admin,
    admin_invitations,
    delete_account,
    domains,
    forgot,
    help,
    keys,
    mailbox_keys,
    mailboxes,
    password,
    reset,
    signin,
    signup,
    subdomain,
    two_factor,
    two_factor_keys,
    two_factor_signin,
)

__all__ = ["install", "outside_routes", "router"]

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
    signup,
    forgot,
    reset,
    delete_account,
    two_factor,
    two_factor_keys,
    two_factor_signin,
    admin,
    admin_invitations,
):
    router.include_router(pages.router)
# Last, once every form's route is in: a GET to a form's address finds its page.
form_pages.add_to(router)


def install(app: FastAPI) -> None:
    app.include_router(router)
    app.add_route("/favicon.ico", assets.favicon, include_in_schema=False)
    app.mount(assets.PATH, assets.files(), name="assets")
