"""The users' guide to connecting clients (docs/help-clients.md) as a dashboard page, with
this relay's own server URL and domain in place of the guide's examples."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup, escape
from starlette.responses import Response

from maskmail.config import Settings
from maskmail.http_shared.connection import Conn
from maskmail.http_shared.public_url import server_url
from maskmail.web.assets import PATH, STATIC, asset_url
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import PageNotFound, require_viewer
from maskmail.web.render import page, root

router = APIRouter(include_in_schema=False, route_class=PageRoute)

GUIDE = "help-clients.md"
# An installed wheel carries the guide beside this package (pyproject's force-include); a
# checkout, where the package is imported from src/, reads the repository's own file.
SOURCES = (
    Path(__file__).parents[1] / "help" / GUIDE,
    Path(__file__).parents[4] / "docs" / GUIDE,
)
# The guide's examples, which the page replaces with this relay's values.
EXAMPLE_SERVER = "https://mask.example.com"
EXAMPLE_DOMAIN = "relay.example.com"
# How the guide names its screenshots: from the repository root, as a forge shows them.
IMAGES = "/src/maskmail/web/static/"


def _image(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """A screenshot from the package's static folder, served by maskmail itself."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    name = src.removeprefix(IMAGES)
    if src.startswith(IMAGES):
        # Versioned by its hash; a screenshot not taken yet is a broken image, not a 500.
        token.attrSet("src", asset_url("", name) if (STATIC / name).is_file() else f"{PATH}/{name}")
    return str(self.image(tokens, idx, options, env))


@lru_cache(maxsize=1)
def _rendered() -> str | None:
    """The guide as HTML; raw HTML in it is shown as text, never run."""
    for source in SOURCES:
        if source.is_file():
            renderer = MarkdownIt("commonmark", {"html": False}).enable("table")
            renderer.add_render_rule("image", _image)
            return str(renderer.render(source.read_text(encoding="utf-8")))
    return None


def clients_guide(base: str, server: str, domain: str) -> Markup | None:
    """The guide for a relay served at ``server`` under the path ``base``."""
    html = _rendered()
    if html is None:
        return None
    filled = (
        html.replace(f'src="{PATH}/', f'src="{escape(base)}{PATH}/')
        .replace(f"<code>{EXAMPLE_SERVER}</code>", f"<code>{escape(server)}</code>")
        .replace(f"<code>{EXAMPLE_DOMAIN}</code>", f"<code>{escape(domain)}</code>")
    )
    return Markup(filled)  # noqa: S704 - markdown-it escaped the file; the values are escaped


@router.get("/help/clients")
async def show_clients_guide(request: Request, conn: Conn) -> Response:
    viewer = await require_viewer(request, conn)
    settings: Settings = request.app.state.settings
    guide = clients_guide(root(request), server_url(request), settings.domain)
    if guide is None:
        raise PageNotFound(viewer)
    return page(request, "help.html", viewer, guide=guide)
