"""Every route answers with one trailing slash as without it, and never by a redirect."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.routing import Match, Mount

from maskmail.api.proxy import Paths
from maskmail.app import create_app
from tests.api.conftest import make_settings

pytestmark = pytest.mark.anyio
_PARAMETER = re.compile(r"\{[^}]+\}")


def _routes(routes: Iterable[Any]) -> Iterator[tuple[str, str]]:
    """Each (method, path template) the app routes, through included routers."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _routes(included.routes)
        elif not isinstance(route, Mount):  # static files: a path names a file
            for method in sorted(route.methods or ()):
                yield method, route.path


async def test_every_route_matches_with_one_trailing_slash_and_no_redirect(
    tmp_path: Path,
) -> None:
    app = create_app(make_settings(f"sqlite+aiosqlite:///{tmp_path / 'paths.db'}"))
    # The rewrite only hands routing another scope: it has no way to answer, so no redirect.
    paths = Paths(app.state.settings)
    found = list(_routes(app.routes))
    assert ("POST", "/api/v1/aliases") in found and ("GET", "/v3/relay/addresses") in found
    unmatched = []
    for method, template in found:
        path = _PARAMETER.sub("1", template).rstrip("/") + "/"
        scope = {
            "type": "http",
            "method": method,
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": b"",
            "headers": [],
            "client": ("127.0.0.1", 5000),
        }
        routed = paths.rewrite(scope)
        if not any(route.matches(routed)[0] is Match.FULL for route in app.routes):
            unmatched.append(f"{method} {path}")
    assert unmatched == []
