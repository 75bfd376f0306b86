"""Every path answers a method it does not take with 405 and an ``Allow`` naming exactly
the methods the path takes (HEAD wherever GET): a literal path never falls to a route
whose integer id it only looks like (issue 21: ``DELETE
/v3/relay/subdomains/use_subdomain`` was a 404)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI
from starlette.routing import BaseRoute, Mount

from maskmail.api.allow import METHODS
from maskmail.api.head import with_head
from tests.api.conftest import Caller

pytestmark = pytest.mark.anyio

_PARAM = re.compile(r"{[^}]*}")


def _routes(routes: list[BaseRoute], prefix: str = "") -> Iterator[tuple[str, set[str]]]:
    """Each route's path and methods, through the routers included in the app."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            inner = prefix + getattr(route, "include_context").prefix  # noqa: B009
            yield from _routes(included.routes, inner)
        elif not isinstance(route, Mount) and getattr(route, "methods", None):
            yield prefix + getattr(route, "path"), set(getattr(route, "methods"))  # noqa: B009


def _paths(app: FastAPI) -> dict[str, set[str]]:
    """Each route's path, its ids filled in, with the methods every route of it takes, and
    HEAD wherever GET (api/head.py)."""
    taken: dict[str, set[str]] = {}
    for template, methods in _routes(app.routes):
        taken.setdefault(_PARAM.sub("1", template), set()).update(methods)
    return {path: set(with_head(methods)) for path, methods in taken.items()}


@pytest.mark.slow
async def test_every_path_answers_405_with_exactly_its_methods(
    app: FastAPI, client: httpx.AsyncClient, alice: Caller
) -> None:
    paths = _paths(app)
    assert "/v3/relay/subdomains/use_subdomain" in paths and len(paths) > 40
    wrong = {}
    for path, taken in sorted(paths.items()):
        allowed = ", ".join(m for m in METHODS if m in taken)
        for method in sorted(set(METHODS) - taken):
            response = await client.request(method, path, headers=alice.headers)
            got = (response.status_code, response.headers.get("Allow"))
            if got != (405, allowed):
                wrong[f"{method} {path}"] = got
    assert wrong == {}


@pytest.mark.parametrize("path", ["/v3/relay/addresses/abc", "/v3/relay/addresses/1x/bounces"])
async def test_an_id_that_is_no_integer_is_no_path(
    client: httpx.AsyncClient, alice: Caller, path: str
) -> None:
    response = await client.get(path, headers=alice.headers)
    assert response.status_code == 404
