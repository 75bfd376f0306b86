"""The API's side of metrics: each request timed by route template (``api/front.py``
calls it), and ``GET /metrics``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response
from starlette.types import Scope

from maskmail import metrics
from maskmail.api.errors import render
from maskmail.api.proxy import ROUTE_PATH
from maskmail.config import Settings
from maskmail.http_shared.forwarded import Network, client_address, ip_of
from maskmail.http_shared.problems import Problem

router = APIRouter()
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
Networks = tuple[Network, ...]


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
        # The template without convertors: ``{address_id}``, not ``{address_id:int}``.
        template = getattr(route, "path_format", None)
        if template is None:
            path = scope[ROUTE_PATH]
            template = path if path in self.fixed else "unmatched"
        method = scope["method"] if scope["method"] in METHODS else "other"
        key = (method, template, status)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = metrics.http_requests.labels(*key)
        series.observe(seconds)


def allowed(client: str, networks: Networks) -> bool:
    address = ip_of(client)
    return address is not None and any(address in network for network in networks)


@router.get("/metrics", include_in_schema=False)
async def read_metrics(request: Request) -> Response:
    """Prometheus text format, only to MASKMAIL_METRICS_ALLOW. The client is the one the
    rate limits see (http_shared/forwarded.py): behind the proxy, the address it forwards for.
    Every spelling of this path that routing serves (a trailing or repeated slash, an
    encoded one, a proxy's prefix: api/proxy.py) comes here."""
    settings: Settings = request.app.state.settings
    networks: Networks = settings.metrics_allow_networks
    if not allowed(client_address(request.scope, settings), networks):
        return render(Problem(403, "forbidden", "metrics are not served to this address"))
    return Response(metrics.render(), media_type=metrics.CONTENT_TYPE)
