"""Looking up a custom domain's records with dnspython: what ``core.custom_domains.judge``
weighs. ``MASKMAIL_DNS_RESOLVER`` points the look-ups at one server (the tests' own)."""

from __future__ import annotations

import asyncio

import dns.asyncresolver
import dns.exception
import dns.resolver

from maskmail.config import Settings
from maskmail.core.custom_domains import CustomDomain, Expected, Found, judge

TIMEOUT = 5.0
# The EDNS buffer size DNS operators agreed on (DNS flag day 2020): a DKIM key fits.
EDNS_PAYLOAD = 1232


def resolver(address: tuple[str, int] | None) -> dns.asyncresolver.Resolver:
    """The system's resolver, or one that asks only ``(host, port)``."""
    made = dns.asyncresolver.Resolver(configure=address is None)
    if address is not None:
        host, port = address
        made.nameservers = [host]
        made.port = port
    made.lifetime = TIMEOUT
    made.use_edns(0, 0, EDNS_PAYLOAD)
    return made


async def _answers(asker: dns.asyncresolver.Resolver, name: str, kind: str) -> list[str] | None:
    """The records' texts; [] when there are none; None when the look-up failed for now."""
    try:
        answer = await asker.resolve(name, kind, search=False)
    except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
        return []
    except dns.exception.DNSException:
        return None
    if kind == "TXT":
        return [b"".join(r.strings).decode("utf-8", "replace") for r in answer]
    return [r.exchange.to_text(omit_final_dot=True) for r in answer]


async def look_up(asker: dns.asyncresolver.Resolver, expected: Expected) -> Found:
    """The four look-ups at once: a slow server costs one timeout, not four."""
    domain_txt, mx_hosts, dkim_txt, dmarc_txt = await asyncio.gather(
        _answers(asker, expected.domain, "TXT"),
        _answers(asker, expected.domain, "MX"),
        _answers(asker, expected.dkim_name, "TXT"),
        _answers(asker, expected.dmarc_name, "TXT"),
    )
    return Found(domain_txt, mx_hosts, dkim_txt, dmarc_txt)


def expected(found: CustomDomain, settings: Settings) -> Expected:
    """The records ``found`` needs on this relay: MX to its host, SPF including its domain."""
    return found.expected(mail_host=settings.mail_hostname, spf_domain=settings.domain)


async def checks_now(found: CustomDomain, settings: Settings) -> dict[str, bool]:
    """The domain's checks as DNS answers now (``MASKMAIL_DNS_RESOLVER``, if set)."""
    wanted = expected(found, settings)
    answers = await look_up(resolver(settings.dns_resolver_address), wanted)
    return judge(wanted, answers, found.checks)
