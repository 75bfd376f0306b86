"""One table from error to HTTP status, and the handlers that render the SPEC's error body."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from maskmail.core import errors

log = logging.getLogger("maskmail.api")

# Looked up along the exception's MRO, so a subclass inherits its parent's answer.
STATUS: dict[type[errors.MaskmailError], tuple[int, str]] = {
    errors.Unauthorized: (401, "unauthorized"),
    errors.LimitReached: (403, "address_limit_reached"),
    errors.AddressNotFound: (404, "not_found"),
    errors.InvalidAddress: (422, "validation_error"),
    errors.RateLimited: (429, "rate_limited"),
    errors.StoreUnavailable: (503, "unavailable"),
    errors.AddressTaken: (503, "unavailable"),
}

HTTP_CODES = {
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


def error_response(
    status: int,
    code: str,
    message: str,
    details: dict[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    body = orjson.dumps({"code": code, "message": message, "details": details or {}})
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def _lookup(exc: errors.MaskmailError) -> tuple[int, str]:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500, "internal_error"


def describe(exc: errors.MaskmailError) -> tuple[int, str, dict[str, str]]:
    """Status, code and headers for an error: shared by the SPEC and the compat contracts."""
    status, code = _lookup(exc)
    headers: dict[str, str] = {}
    if isinstance(exc, errors.Unauthorized):
        headers["WWW-Authenticate"] = 'Bearer realm="maskmail"'
    elif isinstance(exc, errors.RateLimited):
        headers["Retry-After"] = str(exc.retry_after)
    elif isinstance(exc, errors.StoreUnavailable):
        headers["Retry-After"] = "5"
        log.warning("database unavailable: %s", exc.__cause__ or exc)
    return status, code, headers


async def on_maskmail_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, errors.MaskmailError)
    status, code, headers = describe(exc)
    return error_response(status, code, exc.message, exc.details, headers)


def field_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    found = []
    for err in exc.errors():
        loc = [str(part) for part in err.get("loc", ()) if part != "body"]
        message = err.get("msg", "")
        if err["type"] in {"model_attributes_type", "json_invalid"}:
            message = "the body must be a JSON object, sent as application/json"
        elif err["type"] == "string_pattern_mismatch":
            message = "may not contain control characters such as line breaks"
        found.append({"field": ".".join(loc) or "body", "message": message, "type": err["type"]})
    return found


async def on_validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    # A malformed id in the path names no address: that is a 404, as an unknown id is.
    if any(err.get("loc", ("",))[0] == "path" for err in exc.errors()):
        return error_response(404, "not_found", "no such address")
    fields = field_errors(exc)
    first = fields[0]["field"] if fields else "body"
    return error_response(
        422,
        "validation_error",
        f"invalid value for {first}: {fields[0]['message']}" if fields else "invalid request",
        {"field": first, "errors": fields},
    )


def is_undecodable_body(exc: Exception) -> bool:
    """FastAPI's 400 for a body it cannot decode (bytes that are not UTF-8): our routes
    raise no 400 of their own."""
    return isinstance(exc, StarletteHTTPException) and exc.status_code == 400


def undecodable_body() -> RequestValidationError:
    """That body as what it is, one that is not a JSON object: a 422, as documented."""
    return RequestValidationError([{"type": "json_invalid", "loc": ("body",), "msg": "not JSON"}])


async def on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if is_undecodable_body(exc):
        return await on_validation_error(request, undecodable_body())
    code = HTTP_CODES.get(exc.status_code, "http_error")
    message = exc.detail if isinstance(exc.detail, str) else "request failed"
    return error_response(exc.status_code, code, message, headers=exc.headers)


async def on_unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return error_response(500, "internal_error", "internal error; it has been logged")


def install(app: FastAPI) -> None:
    app.add_exception_handler(errors.MaskmailError, on_maskmail_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(Exception, on_unexpected)
