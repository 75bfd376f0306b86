"""Every error a dashboard page raises, answered as a page of the dashboard.

The shape of an error's answer is chosen by the route it was raised on, not by its path:
each dashboard router is made with ``route_class=PageRoute`` (the compatibility routes
do the same with their own class, api/contracts.py). The route knows it is a page with
certainty, whereas the dashboard's paths share the root with the API's and cannot be
told apart by a prefix. Errors of the API's routes, and errors raised before any route
(an unknown path, a body over the limit), keep the API's JSON.

Status, message and headers (Retry-After for an outage) come from the one mapping
(maskmail/http_shared/problems.py); only what a signed-in person acts on differs: a cross-site
form is refused, a missing session is sent to sign in, another user's thing is the 404.
"""

from __future__ import annotations

from fastapi import Request
from starlette.responses import HTMLResponse, Response

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
