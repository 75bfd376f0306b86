"""One mapping from any exception to an HTTP answer; each contract only shapes the body.

``problem`` decides status, code, message, headers and details, and logs what needs
logging. FastAPI's handlers, the fast routes (api/hot.py) and the compatibility routes
(api/contracts.py) call it and render its result in their own body format.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from maskmail.api.schemas import NO_CONTROL_CHARACTERS, NO_NUL
from maskmail.core import errors
from maskmail.http_shared.statuses import STATUS

log = logging.getLogger("maskmail.api")

HTTP_CODES = {
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}
INTERNAL = "internal error; it has been logged"


@dataclass(frozen=True, slots=True)
class Problem:
    """One error as every contract answers it; only the body's shape differs."""

    status: int
    code: str
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)

    def fields(self) -> dict[str, str]:
        """Each offending field and why, for contracts that list them."""
        found: list[dict[str, str]] = list(self.details.get("errors", ()))
        if found:
            # An unparsable body has a character offset for a location, not a field.
            return {
                "body" if f["type"] == "json_invalid" else f["field"]: f["message"] for f in found
            }
        name = self.details.get("field")
        return {str(name): self.message} if name else {}


def problem(exc: BaseException, where: str = "") -> Problem:
    """What to answer for ``exc``; ``where`` (method and path) goes into the log."""
    if isinstance(exc, errors.MaskmailError):
        return _domain_problem(exc)
    if isinstance(exc, RequestValidationError):
        return _validation_problem(exc)
    if isinstance(exc, StarletteHTTPException):
        if exc.status_code == 400:
            # FastAPI's answer to a body it cannot decode (not UTF-8): our routes raise no
            # 400 of their own. It is a body that is not a JSON object, as documented.
            return _validation_problem(_NOT_JSON)
        message = exc.detail if isinstance(exc.detail, str) else "request failed"
        code = HTTP_CODES.get(exc.status_code, "http_error")
        return Problem(exc.status_code, code, message, exc.headers or {})
    log.error("unexpected error on %s", where or "a request", exc_info=exc)
    return Problem(500, "internal_error", INTERNAL)


def _domain_problem(exc: errors.MaskmailError) -> Problem:
    status, code = next(
        (STATUS[cls] for cls in type(exc).__mro__ if cls in STATUS), (500, "internal_error")
    )
    headers: dict[str, str] = {}
    if isinstance(exc, errors.Unauthorized):
        headers["WWW-Authenticate"] = 'Bearer realm="maskmail"'
    elif isinstance(exc, errors.RateLimited):
        headers["Retry-After"] = str(exc.retry_after)
    elif isinstance(exc, errors.StoreUnavailable):
        headers["Retry-After"] = "5"
        log.warning("database unavailable: %s", exc.__cause__ or exc)
    elif isinstance(exc, errors.ToolUnavailable):
        headers["Retry-After"] = "60"
        log.warning("%s", exc.message)
    return Problem(status, code, exc.message, headers, exc.details)


_NOT_JSON = RequestValidationError([{"type": "json_invalid", "loc": ("body",), "msg": "not JSON"}])


def _validation_problem(exc: RequestValidationError) -> Problem:
    # A malformed id in the path names no address: that is a 404, as an unknown id is.
    if any(err.get("loc", ("",))[0] == "path" for err in exc.errors()):
        return Problem(404, "not_found", "no such address")
    found = []
    for err in exc.errors():
        loc = [str(part) for part in err.get("loc", ()) if part != "body"]
        message = err.get("msg", "")
        if err["type"] in {"model_attributes_type", "json_invalid"}:
            message = "the body must be a JSON object, sent as application/json"
        elif err["type"] == "string_pattern_mismatch":
            message = _pattern_message(str(err.get("ctx", {}).get("pattern", "")))
        found.append({"field": ".".join(loc) or "body", "message": message, "type": err["type"]})
    if not found:
        return Problem(
            422, "validation_error", "invalid request", details={"field": "body", "errors": []}
        )
    first = found[0]
    return Problem(
        422,
        "validation_error",
        f"invalid value for {first['field']}: {first['message']}",
        details={"field": first["field"], "errors": found},
    )


def _pattern_message(pattern: str) -> str:
    """What a value that broke ``pattern`` did wrong: only the patterns that forbid
    control characters say so; any other names its pattern."""
    if pattern in (NO_CONTROL_CHARACTERS, NO_NUL):
        return "may not contain control characters such as line breaks"
    return f"must match the pattern {pattern}"


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
