"""Pages from Jinja2 templates, sent with the headers every dashboard page carries."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from fastapi import Request
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.responses import HTMLResponse, RedirectResponse, Response

from maskmail.web.assets import asset_url
from maskmail.web.chart import day_label
from maskmail.web.sessions import Viewer

# No inline script or style, nothing from another host, never inside a frame.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}

env = Environment(
    loader=FileSystemLoader(Path(__file__).with_name("templates")),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


def _when(seconds: int | None) -> str:
    if seconds is None:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(seconds)) + " UTC"


def _day(seconds: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(seconds))


env.filters["when"] = _when
env.filters["day"] = _day
env.filters["day_label"] = day_label


def root(request: Request) -> str:
    """The path prefix the app is served under ('' at the top)."""
    return str(request.scope.get("root_path", "")).rstrip("/")


# The header's pages: (path, name); a page belongs to the first whose path starts its own.
SECTIONS = (
    ("/mailboxes", "Mailboxes"),
    ("/subdomain", "Subdomain"),
    ("/domains", "Domains"),
    ("/activity", "Activity"),
    ("/keys", "API keys"),
    ("/password", "Password"),
    ("/two-factor", "Two-factor"),
)
NAV = (("/", "Addresses"), *SECTIONS)
# The admin page's section, in the header of admins only.
ADMIN = ("/admin", "Admin")
ADMIN_NAV = (*NAV, ADMIN)


def section(request: Request) -> str:
    """The header's page that ``request`` is on ("/" for the addresses, the default)."""
    path = request.url.path.removeprefix(root(request))
    if path.startswith("/help"):
        return "/keys"
    if path == ADMIN[0] or path.startswith(ADMIN[0] + "/"):
        return ADMIN[0]
    return next((p for p, _ in SECTIONS if path.startswith(p)), "/")


def page(
    request: Request,
    template: str,
    viewer: Viewer | None,
    *,
    status: int = 200,
    **context: Any,
) -> Response:
    base = root(request)
    html = env.get_template(template).render(
        base=base,
        asset=lambda name: asset_url(base, name),
        viewer=viewer,
        csrf=viewer.csrf if viewer else "",
        sections=ADMIN_NAV if viewer is not None and viewer.is_admin else NAV,
        section=section(request),
        **context,
    )
    return HTMLResponse(html, status_code=status, headers=HEADERS)


def ask_to_delete(
    request: Request, viewer: Viewer, kind: str, name: str, explain: str, item: str, listed: str
) -> Response:
    """The page that asks before deleting ``item`` (its form posts to ``item``/delete;
    Cancel goes back to ``listed``)."""
    return page(
        request,
        "delete.html",
        viewer,
        kind=kind,
        name=name,
        explain=explain,
        action=f"{item}/delete",
        cancel=listed,
    )


def back_to(request: Request, path: str) -> Response:
    """After a change: see the page again (303, so the browser asks with GET)."""
    return RedirectResponse(root(request) + path, status_code=303, headers=HEADERS)


def sentence(message: str) -> str:
    """A message of the one error mapping (lower case, no full stop) as a page shows it."""
    text = message[:1].upper() + message[1:]
    return text if text.endswith(".") else text + "."


def fragment(template: str, **context: Any) -> str:
    """Part of a page, for htmx to swap in."""
    return env.get_template(template).render(**context)
