"""The custom domains page: add, the DNS records to create, check now, catch-all and
delete, through the functions /v3/relay/domains calls."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from maskmail import dnscheck
from maskmail.config import Settings
from maskmail.core.custom_domains import CHECKS, CustomDomain
from maskmail.core.errors import AddressNotFound
from maskmail.http_shared.connection import Conn
from maskmail.services.domains import add_for, recheck
from maskmail.store import custom_domains as store
from maskmail.store.engine import transaction
from maskmail.web.catch_all import pause_notice
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import (
    PageNotFound,
    Refused,
    attempt,
    change,
    path_id,
    plain_text,
    require_viewer,
    switch,
)
from maskmail.web.render import ask_to_delete, back_to, page
from maskmail.web.sessions import Viewer

router = APIRouter(include_in_schema=False, route_class=PageRoute)

# What each check looks for, as the page names it.
LABELS = {
    "ownership": "Ownership",
    "mx": "MX",
    "spf": "SPF",
    "dkim": "DKIM",
    "dmarc": "DMARC",
}
assert tuple(LABELS) == CHECKS
_GONE = (
    "Every address on it is deleted and stops taking mail; none of them is ever handed out again."
)


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def _domains_page(
    request: Request,
    conn: Conn,
    viewer: Viewer,
    *,
    refused: Refused | None = None,
    name: str = "",
) -> Response:
    settings = _settings(request)
    found = await store.list_domains(conn, viewer.user_id)
    return page(
        request,
        "domains.html",
        viewer,
        status=refused.status if refused else 200,
        domains=[(d, dnscheck.expected(d, settings).records()) for d in found],
        paused=await pause_notice(request, conn, viewer.user_id)
        if any(d.verified and d.catch_all for d in found)
        else "",
        labels=LABELS,
        error=refused.message if refused else "",
        name=name,
    )


async def _owned(conn: Conn, viewer: Viewer, text: str) -> CustomDomain:
    try:
        return await store.get_domain(conn, viewer.user_id, path_id(text, viewer))
    except AddressNotFound as exc:
        raise PageNotFound(viewer) from exc


@router.get("/domains")
async def show_domains(request: Request, conn: Conn) -> Response:
    viewer = await require_viewer(request, conn)
    return await _domains_page(request, conn, viewer)


@router.post("/domains")
async def add_domain(request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    name = plain_text(form.get("domain"), 253)
    settings = _settings(request)
    added = await attempt(conn, viewer, lambda: add_for(conn, viewer.user_id, name, settings))
    if isinstance(added, Refused):
        return await _domains_page(request, conn, viewer, refused=added, name=name)
    return back_to(request, f"/domains#domain-{added.id}")


@router.post("/domains/{domain}/check")
async def check_domain(domain: str, request: Request) -> Response:
    """As POST /v3/relay/domains/{id}/check: no transaction open while DNS answers."""
    engine = request.app.state.engine
    async with transaction(engine, readonly=True) as conn:
        viewer, _ = await change(request, conn)
        found = await _owned(conn, viewer, domain)
    await recheck(engine, viewer.user_id, found, _settings(request))
    return back_to(request, f"/domains#domain-{found.id}")


@router.post("/domains/{domain}/catch-all")
async def switch_catch_all(domain: str, request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    wanted = path_id(domain, viewer)

    async def work() -> CustomDomain:
        on = switch(form, "catch_all")
        return await store.set_catch_all(conn, viewer.user_id, wanted, on)

    done = await attempt(conn, viewer, work)
    if isinstance(done, Refused):
        return await _domains_page(request, conn, viewer, refused=done)
    return back_to(request, f"/domains#domain-{done.id}")


@router.get("/domains/{domain}/delete")
async def confirm_delete(domain: str, request: Request, conn: Conn) -> Response:
    viewer = await require_viewer(request, conn)
    found = await _owned(conn, viewer, domain)
    path = f"/domains/{found.id}"
    return ask_to_delete(request, viewer, "the domain", found.domain, _GONE, path, "/domains")


@router.post("/domains/{domain}/delete")
async def delete_domain(domain: str, request: Request, conn: Conn) -> Response:
    viewer, _ = await change(request, conn)
    wanted = path_id(domain, viewer)
    await attempt(conn, viewer, lambda: store.remove(conn, viewer.user_id, wanted))
    return back_to(request, "/domains")
