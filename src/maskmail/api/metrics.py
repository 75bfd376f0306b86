"""The API's side of metrics: each request timed by route template (``api/front.py``
calls it), and ``GET /metrics``."""

from __future__ import annotations

import ipaddress
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response
from starlette.types import Scope

from maskmail import metrics
from maskmail.api.errors import Problem, render
from maskmail.api.hot import route_path

router = APIRouter()
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
Networks = tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]


class RequestTimes:
    """Each request's latency, labelled with its route's template, never its path.

    ``fixed`` are the paths answered outside routing (``api/hot.py``): their path is
    their template. Anything unrouted is ``unmatched``, so a scan cannot grow the labels.
    """

    def __init__(self, fixed: frozenset[str]) -> None:
        self.fixed = fixed
        # labels() takes a lock and builds a key each call; a request needs one lookup.
        self._series: dict[tuple[str, str, int], Any] = {}

    def observe(self, scope: Scope, status: int, seconds: float) -> None:
        route = scope.get("route")
        template = getattr(route, "path", None)
        if template is None:
            path = route_path(scope)
            template = path if path in self.fixed else "unmatched"
        method = scope["method"] if scope["method"] in METHODS else "other"
        key = (method, template, status)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = metrics.http_requests.labels(*key)
        series.observe(seconds)


def allowed(peer: str | None, networks: Networks) -> bool:
    if peer is None:
        return False
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    return any(address in network for network in networks)


@router.get("/metrics", include_in_schema=False)
async def read_metrics(request: Request) -> Response:
    """Prometheus text format, only to MASKMAIL_METRICS_ALLOW (the direct peer's IP)."""
    peer = request.client.host if request.client else None
    if not allowed(peer, request.app.state.metrics_allow):
        return render(Problem(403, "forbidden", "metrics are not served to this address"))
    return Response(metrics.render(), media_type=metrics.CONTENT_TYPE)
