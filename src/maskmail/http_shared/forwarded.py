"""Who the client is, and whether a reverse proxy's X-Forwarded-* headers are believed.

One rule for the whole HTTP app: the URLs it writes, the path prefix, the rate limits,
the dashboard's sign-in throttle and the metrics allow-list all ask here. A peer in
``MASKMAIL_TRUSTED_PROXIES`` is a proxy; behind it, the client is the nearest address in
``X-Forwarded-For`` that is not a trusted proxy, read from the right, since each proxy
appends the address it was connected from and only the entries our proxies added can
be believed. Anyone else's ``X-Forwarded-*`` headers are ignored.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import lru_cache

from starlette.requests import Request
from starlette.types import Scope

from maskmail.config import Settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
# Longer than any address with a port: an entry past it is not one.
_MAX_ENTRY = 64


def ip_of(text: str) -> IPAddress | None:
    """The address in ``text`` (an IPv4-mapped IPv6 address as IPv4), or None."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@dataclass(frozen=True, slots=True)
class Proxies:
    """``MASKMAIL_TRUSTED_PROXIES``, parsed: ``anyone`` for "*"."""

    anyone: bool
    networks: tuple[Network, ...]
    # The single addresses as the server writes peers, so that the usual peer (nginx on
    # 127.0.0.1) is a set lookup.
    exact: frozenset[str]

    def trusts(self, host: str | None) -> bool:
        if host is None:
            return False
        if self.anyone or host in self.exact:
            return True
        address = ip_of(host)
        return address is not None and any(address in network for network in self.networks)


@lru_cache(maxsize=8)
def proxies(spec: str) -> Proxies:
    """The trusted proxies of the setting's text (checked by ``Settings``), parsed once."""
    parts = [part.strip() for part in spec.split(",") if part.strip()]
    networks = tuple(ipaddress.ip_network(part, strict=False) for part in parts if part != "*")
    exact = frozenset(
        str(network.network_address)
        for network in networks
        if network.prefixlen == network.max_prefixlen
    )
    return Proxies("*" in parts, networks, exact)


def _peer(scope: Scope) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None


def from_trusted_proxy(scope: Scope, settings: Settings) -> bool:
    """True when the request's peer is a trusted proxy, whose X-Forwarded-* are believed."""
    return proxies(settings.trusted_proxies).trusts(_peer(scope))


def _hop(entry: str) -> str:
    """One X-Forwarded-For entry as an address; brackets and a port, which some proxies
    add, are dropped. An entry that is no address is kept as written (and allowed
    nothing that needs an address)."""
    entry = entry.strip()[:_MAX_ENTRY]
    if entry.startswith("["):
        inside = entry[1:].partition("]")[0]
        address = ip_of(inside)
    elif entry.count(":") == 1:
        address = ip_of(entry.partition(":")[0])
    else:
        address = ip_of(entry)
    return entry if address is None else str(address)


def forwarded_for(scope: Scope) -> list[str]:
    """Every X-Forwarded-For entry, over all the header's lines, left to right, as sent."""
    entries: list[str] = []
    for name, value in scope["headers"]:
        if name == b"x-forwarded-for":
            entries.extend(part for part in value.decode("latin-1").split(",") if part.strip())
    return entries


def client_address(scope: Scope, settings: Settings) -> str:
    """The client's address: the peer, or behind trusted proxies the nearest untrusted
    X-Forwarded-For entry from the right (the leftmost when every one is trusted).

    Entries are read only as far as needed: a long header costs a split, not a parse
    of each entry."""
    peer = _peer(scope)
    trusted = proxies(settings.trusted_proxies)
    if peer is None:
        return "unknown"
    if not trusted.trusts(peer):
        return peer
    entries = forwarded_for(scope)
    for entry in reversed(entries):
        hop = _hop(entry)
        if not trusted.trusts(hop):
            return hop
    return _hop(entries[0]) if entries else peer


def client_host(request: Request) -> str:
    """The client's address of a request, as the rule above reads it."""
    settings: Settings = request.app.state.settings
    return client_address(request.scope, settings)


def trusts_peer(request: Request) -> bool:
    """Whether the request's peer is a trusted proxy, by the app's settings."""
    settings: Settings = request.app.state.settings
    return from_trusted_proxy(request.scope, settings)
