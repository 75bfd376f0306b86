"""A tiny authoritative DNS server on loopback, for the SPF, DKIM and DMARC records of
test domains. Names it does not hold are NXDOMAIN; nothing is ever forwarded."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

# name -> [(type, text)], e.g. {"_dmarc.shop.example": [("TXT", '"v=DMARC1; p=reject"')]}
Zone = Mapping[str, list[tuple[str, str]]]
TTL = 60


def answer(query: bytes, zone: Zone) -> bytes | None:
    """The wire answer to one wire query; None for what is not a DNS query at all."""
    try:
        request = dns.message.from_wire(query)
    except dns.exception.DNSException:
        return None
    response = dns.message.make_response(request)
    response.flags |= dns.flags.AA
    records = {dns.name.from_text(name): rows for name, rows in zone.items()}
    for question in request.question:
        rows = records.get(question.name)
        if rows is None:
            response.set_rcode(dns.rcode.NXDOMAIN)
            continue
        texts = [text for kind, text in rows if dns.rdatatype.from_text(kind) == question.rdtype]
        if texts:
            response.answer.append(
                dns.rrset.from_text_list(
                    question.name, TTL, dns.rdataclass.IN, question.rdtype, texts
                )
            )
    return response.to_wire()


@contextmanager
def running_dns(zone: Zone) -> Iterator[int]:
    """Serve ``zone`` over UDP on 127.0.0.1; yield the port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                query, peer = sock.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            reply = answer(query, zone)
            if reply is not None:
                sock.sendto(reply, peer)

    thread = threading.Thread(target=serve, name="test-dns", daemon=True)
    thread.start()
    try:
        yield int(sock.getsockname()[1])
    finally:
        stop.set()
        thread.join(5)
        sock.close()
