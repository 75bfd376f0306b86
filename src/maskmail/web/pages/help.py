"""The client set-up guide (docs/clients.md) as a dashboard page, so that the keys page
can link to it without sending anyone to another host."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from fastapi import APIRouter, Request
from markdown_it import MarkdownIt
from markupsafe import Markup
from starlette.responses import Response

from maskmail.api.deps import Conn
from maskmail.web.guard import PageNotFound, require_viewer
from maskmail.web.render import page

router = APIRouter(include_in_schema=False)

# An installed wheel carries the guide beside this package (pyproject's force-include); a
# checkout, where the package is imported from src/, reads the repository's own file.
SOURCES = (
    Path(__file__).parents[1] / "help" / "clients.md",
    Path(__file__).parents[4] / "docs" / "clients.md",
)


@lru_cache(maxsize=1)
def clients_guide() -> Markup | None:
    """docs/clients.md as HTML; raw HTML in it is shown as text, never run."""
    for source in SOURCES:
        if source.is_file():
            renderer = MarkdownIt("commonmark", {"html": False}).enable("table")
            html = renderer.render(source.read_text(encoding="utf-8"))
            return Markup(html)  # noqa: S704 - markdown-it escaped any HTML in the file
    return None


@router.get("/help/clients")
async def show_clients_guide(request: Request, conn: Conn) -> Response:
    viewer = await require_viewer(request, conn)
    guide = clients_guide()
    if guide is None:
        raise PageNotFound(viewer)
    return page(request, "help.html", viewer, guide=guide)
