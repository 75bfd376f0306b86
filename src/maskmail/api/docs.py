"""OpenAPI: every status a route can answer, each with the one error schema; and
``/docs``, Swagger UI served from the copy shipped in ``static/swagger``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel
from starlette.responses import HTMLResponse

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


RAW_KEY_SCHEME = "simpleLoginKey"


def errors_for(
    *statuses: int,
    model: type[BaseModel] = Error,
    descriptions: Mapping[int, str] = DESCRIPTIONS,
) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` entry for a route: the given statuses plus 500, in one schema."""
    return {
        status: {"model": model, "description": descriptions[status]} for status in (*statuses, 500)
    }


def page_errors_for(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``errors_for`` for a route that answers a page: its errors are the same JSON problems
    (a ``model`` would be filed under the page's media type). The other routes put
    ``Error`` in the schema's components."""
    problem = {"application/json": {"schema": {"$ref": f"#/components/schemas/{Error.__name__}"}}}
    return {
        status: {"description": DESCRIPTIONS[status], "content": problem}
        for status in (*statuses, 500)
    }


SchemaPatch = Callable[[dict[str, Any]], None]

ADDRESSES = "/v3/relay/addresses"
ONE_ADDRESS = "/v3/relay/addresses/{address_id}"
LINK_NAMES = {
    "get": "ReadAddress",
    "patch": "PatchAddress",
    "put": "PutAddress",
    "delete": "DeleteAddress",
}


def link_created_address(schema: dict[str, Any]) -> None:
    """OpenAPI links from a created address to the operations on it by id, so that
    clients and stateful testers (schemathesis) know where the new ``id`` goes."""
    paths = schema.get("paths", {})
    created = paths.get(ADDRESSES, {}).get("post", {}).get("responses", {}).get("200")
    if created is None:
        return
    links = created.setdefault("links", {})
    for method, operation in paths.get(ONE_ADDRESS, {}).items():
        if method in LINK_NAMES:
            links[LINK_NAMES[method]] = {
                "operationId": operation["operationId"],
                "parameters": {"address_id": "$response.body#/id"},
                "description": f"{method.upper()} the address just created, by its id.",
            }


def install(app: FastAPI, patches: Sequence[SchemaPatch] = ()) -> None:
    """Replace FastAPI's default 422 schema, which our handlers never send, and apply
    ``patches``: facts only known at run time, such as the configured domain."""

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
            "apiKey": {"type": "http", "scheme": "bearer", "description": "A maskmail API key."},
            # SimpleLogin's contract sends the key alone, in a header of its own.
            RAW_KEY_SCHEME: {
                "type": "apiKey",
                "in": "header",
                "name": "Authentication",
                "description": "A maskmail API key, with no scheme (SimpleLogin routes).",
            },
        }
        schema["security"] = [{"apiKey": []}]
        link_created_address(schema)
        for patch in patches:
            patch(schema)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
    _install_ui(app)


# swagger-ui-dist, pinned in static/swagger/MANIFEST.json with each file's SHA-256.
SWAGGER_DIR = Path(__file__).with_name("static") / "swagger"
DOCS = "/docs"
ASSETS = "/docs/assets"


def _install_ui(app: FastAPI) -> None:
    """``/docs`` loads nothing from another host: the page, its script, its style and its
    icon all come from this server (the app is made with ``docs_url=None``)."""
    app.mount(ASSETS, StaticFiles(directory=SWAGGER_DIR), name="swagger-assets")

    @app.get(DOCS, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - API",
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon-32x32.png",
            # Swagger UI would otherwise send the document to validator.swagger.io.
            swagger_ui_parameters={"validatorUrl": None},
        )
