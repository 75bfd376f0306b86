"""OpenAPI: every status a route can answer, each with the one error schema."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from maskmail.api.schemas import Error

DESCRIPTIONS = {
    401: "Missing, malformed, unknown or revoked API key (`unauthorized`).",
    403: "The caller is at the address limit (`address_limit_reached`).",
    404: "The id is unknown or not the caller's (`not_found`).",
    413: "The request body is too large (`payload_too_large`).",
    422: "The body breaks a rule; `details.field` names the field (`validation_error`).",
    429: "Too many requests (`rate_limited`); see `Retry-After`.",
    500: "Unexpected failure (`internal_error`); nothing internal is shown.",
    503: "The database is unavailable (`unavailable`); retry after `Retry-After`.",
}


def errors_for(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` entry for a route: the given statuses plus 500."""
    return {
        status: {"model": Error, "description": DESCRIPTIONS[status]} for status in (*statuses, 500)
    }


def install(app: FastAPI) -> None:
    """Replace FastAPI's default 422 schema, which our handlers never send."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        for path in schema.get("paths", {}).values():
            for operation in path.values():
                responses = operation.get("responses", {})
                default_422 = responses.get("422", {})
                ref = str(default_422.get("content", {}).get("application/json", {}))
                if "HTTPValidationError" in ref:
                    del responses["422"]
        components = schema.get("components", {}).get("schemas", {})
        components.pop("HTTPValidationError", None)
        components.pop("ValidationError", None)
        schema["components"]["securitySchemes"] = {
            "apiKey": {"type": "http", "scheme": "bearer", "description": "A maskmail API key."}
        }
        schema["security"] = [{"apiKey": []}]
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
