"""Every error a dashboard page raises, answered as a page of the dashboard.

The shape of an error's answer is chosen by the route it was raised on: each dashboard
router is made with ``route_class=PageRoute`` (the compatibility routes do the same with
their own class, api/contracts.py), so whatever a page raises is a page. An error raised
before any route (an unknown path, a method the path does not take, a body over the
limit) has no route to ask: ``outside_routes`` answers it as a page when the one rule
(``http_shared/problems.wants_page``) says a browser asked outside the API's paths; the
API's paths keep the JSON of their contract.

Status, message and headers (Retry-After for an outage) come from the one mapping
(maskmail/http_shared/problems.py); only what a signed-in person acts on differs: a cross-site
form is refused, a missing session is sent to sign in, another user's thing is the 404.
"""

from __future__ import annotations

from fastapi import Request
from starlette.exceptions import HTTPException
from starlette.responses import HTMLResponse, Response
from starlette.types import Scope

from maskmail.http_shared.problems import answering_route, problem
from maskmail.web import csrf
from maskmail.web.guard import PageNotFound, SignInNeeded
from maskmail.web.render import HEADERS, back_to, page, sentence
from maskmail.web.sessions import Viewer


def error_page(
    request: Request, status: int, message: str, viewer: Viewer | None = None
) -> Response:
    """``message`` as a page, or as the bare text htmx shows in the status line."""
    if request.headers.get("hx-request"):
        return HTMLResponse(message, status_code=status, headers=HEADERS)
    return page(request, "error.html", viewer, status=status, message=message)


def answer(request: Request, exc: Exception) -> Response:
    if isinstance(exc, csrf.Forbidden):
        return error_page(request, 403, "This request was refused.")
    if isinstance(exc, SignInNeeded):
        return back_to(request, "/")
    if isinstance(exc, PageNotFound):
        return error_page(request, 404, "There is no such page.", exc.viewer)
    found = problem(exc, f"{request.method} {request.url.path}")
    response = error_page(request, found.status, sentence(found.message))
    response.headers.update(found.headers)
    return response


# A dashboard route: whatever its dependencies or its endpoint raise is a page.
PageRoute = answering_route(answer)


def outside_routes(scope: Scope, exc: Exception) -> Response:
    """An error no route answered, as a page; the composition (maskmail/app.py) hands
    this to the API's middleware and routing for the requests ``wants_page`` gives us."""
    request = Request(scope)
    if isinstance(exc, HTTPException) and exc.status_code == 404:
        return error_page(request, 404, "There is no such page.")
    return answer(request, exc)
