"""The relay subdomain page: claim, rename, delete, catch-all, and whether new addresses
are made on it; the store functions and rules of /v3/relay/subdomains."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from fastapi import APIRouter, Request
from starlette.datastructures import FormData
from starlette.responses import Response

from maskmail.config import Settings
from maskmail.core.errors import AddressNotFound, InvalidAddress
from maskmail.core.first_mail import CERTIFICATE_MAILBOXES
from maskmail.core.subdomains import MAX_LENGTH, MIN_LENGTH, Subdomain, check_subdomain
from maskmail.http_shared.connection import Conn
from maskmail.services.subdomains import naming
from maskmail.store import subdomains as store
from maskmail.store.subdomains import Naming
from maskmail.web.catch_all import pause_notice
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import (
    PageNotFound,
    Refused,
    attempt,
    change,
    path_id,
    refusal,
    require_viewer,
    switch,
)
from maskmail.web.render import back_to, page
from maskmail.web.sessions import Viewer

router = APIRouter(include_in_schema=False, route_class=PageRoute)


def _domain(request: Request) -> str:
    settings: Settings = request.app.state.settings
    return settings.domain


def _naming(request: Request) -> Naming:
    """The rules a new name meets (the API's, from the same settings)."""
    return naming(request.app.state.settings)


def _name(form: FormData) -> str:
    # Not trimmed nor folded: the rules judge what was typed, as the API's do.
    return str(form.get("subdomain") or "")[: MAX_LENGTH * 4]


async def _subdomain_page(
    request: Request,
    conn: Conn,
    viewer: Viewer,
    *,
    refused: Refused | None = None,
    name: str = "",
) -> Response:
    found = await store.list_subdomains(conn, viewer.user_id)
    sub = found[0] if found else None
    return page(
        request,
        "subdomain.html",
        viewer,
        status=refused.status if refused else 200,
        sub=sub,
        count=await store.address_count(conn, viewer.user_id, sub.subdomain) if sub else 0,
        use=await store.uses_subdomain(conn, viewer.user_id),
        certificate_mailboxes=", ".join(sorted(CERTIFICATE_MAILBOXES)),
        paused=await pause_notice(request, conn, viewer.user_id) if sub and sub.catch_all else "",
        domain=_domain(request),
        error=refused.message if refused else "",
        name=name,
        min_length=MIN_LENGTH,
        max_length=MAX_LENGTH,
    )


async def _owned(conn: Conn, viewer: Viewer, text: str) -> Subdomain:
    wanted = path_id(text, viewer)
    for sub in await store.list_subdomains(conn, viewer.user_id):
        if sub.id == wanted:
            return sub
    raise PageNotFound(viewer)


async def _confirm(
    request: Request, conn: Conn, viewer: Viewer, found: Subdomain, *, new: str = ""
) -> Response:
    """Asks before a rename (to ``new``) or a deletion, saying what is deleted."""
    count = await store.address_count(conn, viewer.user_id, found.subdomain)
    return page(
        request,
        "subdomain_confirm.html",
        viewer,
        sub=found,
        new=new,
        count=count,
        domain=_domain(request),
    )


@router.get("/subdomain")
async def show_subdomain(request: Request, conn: Conn) -> Response:
    viewer = await require_viewer(request, conn)
    return await _subdomain_page(request, conn, viewer)


async def _then_page(
    request: Request,
    conn: Conn,
    viewer: Viewer,
    work: Callable[[], Awaitable[object]],
    *,
    name: str = "",
) -> Response:
    """Run the change, then show the page again, with the refusal if any."""
    done = await attempt(conn, viewer, work)
    if isinstance(done, Refused):
        return await _subdomain_page(request, conn, viewer, refused=done, name=name)
    return back_to(request, "/subdomain")


@router.post("/subdomain")
async def claim(request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    name = _name(form)
    work = partial(store.claim, conn, viewer.user_id, name, domain=_naming(request))
    return await _then_page(request, conn, viewer, work, name=name)


@router.post("/subdomain/use")
async def use_subdomain(request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)

    async def work() -> bool:
        return await store.set_use_subdomain(conn, viewer.user_id, switch(form, "use"))

    return await _then_page(request, conn, viewer, work)


@router.post("/subdomain/{subdomain}")
async def switch_catch_all(subdomain: str, request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    wanted, domain = path_id(subdomain, viewer), _domain(request)

    async def work() -> Subdomain:
        on = switch(form, "catch_all")
        return await store.change(conn, viewer.user_id, wanted, domain=domain, catch_all=on)

    return await _then_page(request, conn, viewer, work)


@router.post("/subdomain/{subdomain}/rename")
async def rename(subdomain: str, request: Request, conn: Conn) -> Response:
    """Asks first, showing what will be deleted; renames once confirmed."""
    viewer, form = await change(request, conn)
    found, name, naming = await _owned(conn, viewer, subdomain), _name(form), _naming(request)
    if form.get("confirmed") != "yes":
        try:
            check_subdomain(name, naming.own)
        except InvalidAddress as exc:
            return await _subdomain_page(request, conn, viewer, refused=refusal(exc), name=name)
        return await _confirm(request, conn, viewer, found, new=name)
    work = partial(store.change, conn, viewer.user_id, found.id, domain=naming, name=name)
    return await _then_page(request, conn, viewer, work, name=name)


@router.get("/subdomain/{subdomain}/delete")
async def confirm_delete(subdomain: str, request: Request, conn: Conn) -> Response:
    viewer = await require_viewer(request, conn)
    return await _confirm(request, conn, viewer, await _owned(conn, viewer, subdomain))


@router.post("/subdomain/{subdomain}/delete")
async def delete(subdomain: str, request: Request, conn: Conn) -> Response:
    viewer, _ = await change(request, conn)
    wanted = path_id(subdomain, viewer)
    try:
        await store.remove(conn, viewer.user_id, wanted)
    except AddressNotFound as exc:
        raise PageNotFound(viewer) from exc
    return back_to(request, "/subdomain")
