"""The client address rule (http_shared/forwarded.py): X-Forwarded-For read from the right,
past trusted proxies only, and ignored from anyone else."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from starlette.types import Scope

from maskmail.config import Settings
from maskmail.http_shared.forwarded import client_address, from_trusted_proxy

# nginx on this machine, and a load balancer network in front of it.
SETTINGS = Settings(trusted_proxies="127.0.0.1, ::1, 10.1.0.0/16")


def scope(peer: str | None, *forwarded_for: str) -> Scope:
    return {
        "type": "http",
        "client": None if peer is None else (peer, 5000),
        "headers": [(b"x-forwarded-for", value.encode("latin-1")) for value in forwarded_for],
    }


@pytest.mark.parametrize(
    ("peer", "forwarded_for", "client"),
    [
        # No proxy: the peer, whatever it writes.
        ("198.51.100.7", (), "198.51.100.7"),
        ("198.51.100.7", ("127.0.0.1",), "198.51.100.7"),
        ("198.51.100.7", ("10.1.0.5, 127.0.0.1",), "198.51.100.7"),
        # nginx forwarding for a client.
        ("127.0.0.1", ("198.51.100.7",), "198.51.100.7"),
        ("::1", ("2001:db8::7",), "2001:db8::7"),
        # A client's own header comes first; nginx appends the address it saw.
        ("127.0.0.1", ("127.0.0.1, 198.51.100.7",), "198.51.100.7"),
        ("127.0.0.1", ("203.0.113.1, 10.1.0.9, 198.51.100.7",), "198.51.100.7"),
        # Two proxies: the load balancer's entry is skipped, the one before it is the client.
        ("127.0.0.1", ("198.51.100.7, 10.1.2.3",), "198.51.100.7"),
        ("127.0.0.1", ("6.6.6.6, 198.51.100.7, 10.1.2.3",), "198.51.100.7"),
        # Several header lines are one list, in order.
        ("127.0.0.1", ("6.6.6.6", "198.51.100.7, 10.1.2.3"), "198.51.100.7"),
        # Ports and brackets some proxies add; an IPv4-mapped peer or entry.
        ("127.0.0.1", ("198.51.100.7:4711",), "198.51.100.7"),
        ("127.0.0.1", ("[2001:db8::7]:4711",), "2001:db8::7"),
        ("::ffff:127.0.0.1", ("::ffff:198.51.100.7",), "198.51.100.7"),
        # Every entry a proxy: the leftmost; no header: the proxy itself.
        ("127.0.0.1", ("10.1.0.1, 10.1.0.2",), "10.1.0.1"),
        ("127.0.0.1", (), "127.0.0.1"),
        ("127.0.0.1", (" , ",), "127.0.0.1"),
        # What a proxy forwarded that is no address is kept as written.
        ("127.0.0.1", ("unknown",), "unknown"),
        (None, ("198.51.100.7",), "unknown"),
    ],
)
def test_the_client_is_the_nearest_untrusted_hop(
    peer: str | None, forwarded_for: tuple[str, ...], client: str
) -> None:
    assert client_address(scope(peer, *forwarded_for), SETTINGS) == client


def test_trust_is_by_address_or_network_or_everyone() -> None:
    assert from_trusted_proxy(scope("127.0.0.1"), SETTINGS)
    assert from_trusted_proxy(scope("10.1.200.3"), SETTINGS)
    assert from_trusted_proxy(scope("0:0:0:0:0:0:0:1"), SETTINGS)
    assert not from_trusted_proxy(scope("127.0.0.2"), SETTINGS)
    assert not from_trusted_proxy(scope("10.2.0.1"), SETTINGS)
    assert not from_trusted_proxy(scope(None), SETTINGS)
    assert not from_trusted_proxy(scope("not an address"), SETTINGS)
    anyone = Settings(trusted_proxies="*")
    assert from_trusted_proxy(scope("203.0.113.9"), anyone)
    assert client_address(scope("203.0.113.9", "192.0.2.1"), anyone) == "192.0.2.1"


@pytest.mark.parametrize("value", ["localhost", "127.0.0.1,nginx", "10.0.0.0/33"])
def test_a_trusted_proxy_that_is_no_address_is_refused_at_start(value: str) -> None:
    with pytest.raises(ValidationError, match="IPs or networks"):
        Settings(trusted_proxies=value)
