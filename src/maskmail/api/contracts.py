"""Routes that answer errors in another service's shape (addy.io, SimpleLogin).

The status of each error still comes from the one table in ``api/errors.py``; only
the body differs, because the clients of those services read their own field.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import orjson
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from maskmail.api.docs import errors_for
from maskmail.api.errors import describe, field_errors, is_undecodable_body, undecodable_body
from maskmail.core.errors import MaskmailError

log = logging.getLogger("maskmail.api")


class Failure:
    """One error, ready to be rendered in a contract's shape."""

    def __init__(
        self,
        status: int,
        message: str,
        headers: Mapping[str, str] | None = None,
        fields: Mapping[str, str] | None = None,
    ) -> None:
        self.status = status
        self.message = message
        self.headers = dict(headers or {})
        self.fields = dict(fields or {})


Renderer = Callable[[Failure], dict[str, Any]]

# What each status means on a compatibility route; a contract may reword some.
DESCRIPTIONS = {
    401: "Missing, malformed, unknown or revoked API key.",
    403: "The account is at its address limit (`MASKMAIL_MAX_ADDRESSES_PER_USER`).",
    422: "The body is not a JSON object, or a field has the wrong type.",
    429: "Too many requests; see `Retry-After`.",
    500: "Unexpected failure; nothing internal is shown.",
    503: "The database is unavailable; retry after `Retry-After`.",
}


def contract_errors(
    model: type[BaseModel], statuses: tuple[int, ...], reworded: Mapping[int, str]
) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` entry of a compatibility route, in the contract's error schema;
    ``reworded`` holds the contract's own wording of some statuses."""
    return errors_for(*statuses, model=model, descriptions={**DESCRIPTIONS, **reworded})


def _failure(exc: Exception) -> Failure:
    if is_undecodable_body(exc):
        exc = undecodable_body()
    if isinstance(exc, MaskmailError):
        status, _, headers = describe(exc)
        field = exc.details.get("field")
        fields = {str(field): exc.message} if field else {}
        return Failure(status, exc.message, headers, fields)
    if isinstance(exc, RequestValidationError):
        fields = {
            # An unparsable body has a character offset for a location, not a field.
            "body" if f["type"] == "json_invalid" else f["field"]: f["message"]
            for f in field_errors(exc)
        }
        first = next(iter(fields.items()), ("body", "invalid request"))
        return Failure(422, f"{first[0]}: {first[1]}", fields=fields)
    log.exception("unexpected error in a compatibility route")
    return Failure(500, "internal error; it has been logged")


def contract_route(render: Renderer) -> type[APIRoute]:
    """An APIRoute class whose errors, from dependencies or the endpoint, use ``render``."""

    class ContractRoute(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def handle(request: Request) -> Response:
                try:
                    return await handler(request)
                except Exception as exc:
                    failure = _failure(exc)
                    return Response(
                        orjson.dumps(render(failure)),
                        status_code=failure.status,
                        media_type="application/json",
                        headers=failure.headers,
                    )

            return handle

    return ContractRoute
