"""One mapping from any exception to an HTTP answer, for every door that speaks HTTP.

``problem`` decides status, code, message, headers and details, and logs what needs
logging. Each door renders its result in its own shape: the API as the SPEC's JSON body
(api/errors.py), the compatibility routes as their service's body (api/contracts.py), the
dashboard as a page (web/error_pages.py); ``answering_route`` gives a router's routes
their shape, and ``wants_page`` decides the shape of an error no route answered (an
unknown path, a 405, a body over the limit). It sits below the doors so that neither
imports the other for it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from maskmail.core import errors
from maskmail.core.text import NO_CONTROL_CHARACTERS, NO_NUL

# The API's logger still: the log lines (and anything that watches them) are unchanged.
log = logging.getLogger("maskmail.api")

# Looked up along the exception's MRO, so a subclass inherits its parent's answer.
STATUS: dict[type[errors.MaskmailError], tuple[int, str]] = {
    errors.Unauthorized: (401, "unauthorized"),
    errors.LimitReached: (403, "address_limit_reached"),
    errors.SubdomainLimitReached: (403, "subdomain_limit_reached"),
    errors.MailboxLimitReached: (403, "mailbox_limit_reached"),
    errors.DomainLimitReached: (403, "domain_limit_reached"),
    errors.AddressNotFound: (404, "not_found"),
    errors.InvalidAddress: (422, "validation_error"),
    errors.RateLimited: (429, "rate_limited"),
    errors.StoreUnavailable: (503, "unavailable"),
    errors.ToolUnavailable: (503, "unavailable"),
    errors.AddressTaken: (503, "unavailable"),
    # Over HTTP only the verification message of a new mailbox is sent.
    errors.DeliveryDeferred: (503, "unavailable"),
    errors.DeliveryRefused: (422, "validation_error"),
}

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


# The JSON side of the app: the SPEC's routes and the compatibility contracts. Every
# error under these prefixes is the JSON its contract gives, whoever asks.
API_PREFIXES = ("/v3/", "/api/")


def wants_page(scope: Scope, path: str) -> bool:
    """Whether an error that no route answered is a page of the dashboard rather than
    JSON: ``path`` (as routing sees it) is outside the API's prefixes and a browser asked
    (its Accept names HTML, as every navigation and form post does, or htmx asked).

    By the request, not by the path alone: the dashboard's paths share the root with the
    probes and the metrics, and an unknown path belongs to no one, so a script that asks
    for one still gets JSON.
    """
    if path.startswith(API_PREFIXES) or path.rstrip("/") in {"/v3", "/api"}:
        return False
    for name, value in scope["headers"]:
        if name == b"hx-request" or (name == b"accept" and b"text/html" in value):
            return True
    return False


Answer = Callable[[Request, Exception], Response]
# The answer to an error no route answered, from the request's scope.
ScopeAnswer = Callable[[Scope, Exception], Response]
# Where FastAPI keeps the exit stack of a request's function-scoped dependencies.
_FUNCTION_STACK = "fastapi_function_astack"


def answering_route(answer: Answer) -> type[APIRoute]:
    """An APIRoute class whose errors, from its dependencies or its endpoint, are answered
    by ``answer`` rather than by the app's handlers.

    The route's function-scoped dependencies (the request's transaction) exit with the
    exception before it is answered, so that a change that failed half way is rolled back
    as it is when the exception reaches the app's handlers; caught while they are still
    open, they would see a normal return and commit. FastAPI's stack for them is found by
    a key of its own: the rollback tests (tests/web/test_error_pages.py,
    tests/api/test_compat_addy.py) fail if a FastAPI release renames it.
    """

    class AnsweringRoute(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def handle(request: Request) -> Response:
                outer = request.scope.get(_FUNCTION_STACK)
                try:
                    async with AsyncExitStack() as own:
                        request.scope[_FUNCTION_STACK] = own
                        return await handler(request)
                except Exception as exc:
                    return answer(request, exc)
                finally:
                    request.scope[_FUNCTION_STACK] = outer

            return handle

    return AnsweringRoute
