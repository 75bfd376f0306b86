"""Routes that answer errors in another service's shape (addy.io, SimpleLogin).

Status, message and headers come from the one mapping in ``http_shared/problems.py``; only the
body differs, because the clients of those services read their own field.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from maskmail.api import errors
from maskmail.api.docs import DESCRIPTIONS, errors_for
from maskmail.api.proxy import route_path
from maskmail.http_shared.problems import Problem, answering_route, problem

Renderer = Callable[[Problem], dict[str, Any]]
# The SPEC's description of a status names its `code`, which these bodies do not carry.
_CODE = re.compile(r" \(`[a-z_]+`\)")


def contract_errors(
    model: type[BaseModel], statuses: tuple[int, ...], reworded: Mapping[int, str]
) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` entry of a compatibility route, in the contract's error schema;
    ``reworded`` holds the contract's own wording of some statuses."""
    plain = {status: _CODE.sub("", text) for status, text in DESCRIPTIONS.items()}
    return errors_for(*statuses, model=model, descriptions={**plain, **reworded})


def _respond(found: Problem, render: Renderer) -> Response:
    return Response(
        orjson.dumps(render(found)),
        status_code=found.status,
        media_type="application/json",
        headers=found.headers,
    )


def contract_route(render: Renderer) -> type[APIRoute]:
    """An APIRoute class whose errors, from dependencies or the endpoint, use ``render``."""

    def answer(request: Request, exc: Exception) -> Response:
        return _respond(problem(exc, f"{request.method} {request.url.path}"), render)

    return answering_route(answer)


def outside_routes(
    renderers: Sequence[tuple[str, Renderer]], scope: Scope, exc: Exception
) -> Response:
    """An error no route answered (a body over the limit before routing, an exception
    no handler took), in the body format of the contract whose path prefix the request
    is under (longest first), or the SPEC's."""
    path = route_path(scope)
    found = problem(exc, f"{scope['method']} {path}")
    for prefix, render in renderers:
        if path == prefix or path.startswith(prefix + "/"):
            return _respond(found, render)
    return errors.render(found)
