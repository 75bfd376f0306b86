"""Paths as clients and reverse proxies send them: repeated slashes and path prefixes,
and the path routing sees, worked out once per request."""

from __future__ import annotations

import re

from starlette.types import Scope

from maskmail.config import Settings, clean_prefix
from maskmail.http_shared.forwarded import from_trusted_proxy

_SLASHES = re.compile(r"/{2,}")
_RAW_SLASHES = re.compile(rb"/{2,}")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            first = value.decode("latin-1").split(",")[0].strip()
            return first or None
    return None


def _trailing_slash(path: str) -> bool:
    return len(path) > 1 and path.endswith("/")


# Where ``Paths.rewrite`` keeps the route path for the rest of the request: worked out
# once, read by the hot routes, the metrics and the key's last use.
ROUTE_PATH = "maskmail.route_path"


def route_path(scope: Scope) -> str:
    """The path routing sees: without the ``root_path`` a proxy prefix put in front."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and path[len(root) : len(root) + 1] in {"", "/"}:
        return path[len(root) :]
    return path


class Paths:
    """Rewrites the path before routing, so that no request needs a redirect.

    - A base URL typed with a trailing slash makes clients ask for ``//api/...``
      (Bitwarden joins base URL and path as strings); repeated slashes collapse.
    - One trailing slash is the same path without it: alias clients post to
      ``aliases/``, and a redirect would lose a POST's body.
    - Behind a reverse proxy under a prefix, the prefix comes from a trusted
      proxy's ``X-Forwarded-Prefix`` or from ``MASKMAIL_ROOT_PATH``. It becomes the
      ASGI ``root_path``, so absolute URLs and the docs carry it, and routing works
      whether or not the proxy stripped it from the path.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def _prefix(self, scope: Scope) -> str:
        forwarded = _header(scope, b"x-forwarded-prefix")
        if forwarded and from_trusted_proxy(scope, self.settings):
            prefix = clean_prefix(forwarded)
            if prefix is not None:
                return prefix
        return self.settings.root_path or str(scope.get("root_path", "")).rstrip("/")

    def rewrite(self, scope: Scope) -> Scope:
        """The scope routing should see, with its route path kept under ``ROUTE_PATH``:
        the same scope when there is nothing to rewrite."""
        path = scope["path"]
        raw = scope.get("raw_path")
        prefix = self._prefix(scope)
        if (
            "//" not in path
            and (raw is None or b"//" not in raw)
            and not _trailing_slash(path)
            and prefix == scope.get("root_path", "")
            and (not prefix or path == prefix or path.startswith(prefix + "/"))
        ):
            scope[ROUTE_PATH] = route_path(scope)
            return scope  # nothing to rewrite: the usual case
        scope = dict(scope)
        path = _SLASHES.sub("/", path)
        if raw is not None:
            raw = _RAW_SLASHES.sub(b"/", raw)
        if _trailing_slash(path):
            path = path[:-1]
            if raw is not None and raw.endswith(b"/"):
                raw = raw[:-1]
        if prefix and not (path == prefix or path.startswith(prefix + "/")):
            path = prefix + path
            raw = prefix.encode("ascii") + raw if raw is not None else None
        scope["path"] = path
        scope["root_path"] = prefix
        if raw is not None:
            scope["raw_path"] = raw
        scope[ROUTE_PATH] = route_path(scope)
        return scope
