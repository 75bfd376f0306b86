"""The API's error body: the one mapping's answer (maskmail/http_shared/problems.py) as JSON.

FastAPI's handlers and the fast routes (api/hot.py) answer with it; the compatibility
routes (api/contracts.py) render the same answer in their own body.
"""

from __future__ import annotations

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from maskmail.core import errors
from maskmail.http_shared.problems import Problem, problem


def render(found: Problem) -> Response:
    """The SPEC's error body."""
    body = orjson.dumps({"code": found.code, "message": found.message, "details": found.details})
    return Response(
        body, status_code=found.status, media_type="application/json", headers=found.headers
    )


def answer(request: Request, exc: BaseException) -> Response:
    return render(problem(exc, f"{request.method} {request.url.path}"))


async def _handler(request: Request, exc: Exception) -> Response:
    return answer(request, exc)


def install(app: FastAPI) -> None:
    for kind in (errors.MaskmailError, RequestValidationError, StarletteHTTPException, Exception):
        app.add_exception_handler(kind, _handler)
