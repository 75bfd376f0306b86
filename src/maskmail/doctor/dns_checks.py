"""The doctor's DNS checks: the relay domain's records, by the rules of custom domains,
and the mail host's reverse DNS, asked of ``MASKMAIL_DNS_RESOLVER`` when it is set."""

from __future__ import annotations

from pathlib import Path

import dns.asyncresolver
import dns.resolver
import dns.reversename
from cryptography.hazmat.primitives import serialization

from maskmail.config import Settings
from maskmail.core.custom_domains import MX_PRIORITY, Expected, judge
from maskmail.core.dkim_keys import txt_value
from maskmail.dnscheck import look_up, resolver
from maskmail.doctor.report import TIMEOUT, Check

RELAY_DMARC = "v=DMARC1; p=quarantine"  # docs/deploy.md's
NOBODY_LABEL = "maskmail-doctor"  # a subdomain of the relay's that nobody claims


def asker_for(settings: Settings) -> dns.asyncresolver.Resolver:
    """The resolver of MASKMAIL_DNS_RESOLVER, answering within a check's time."""
    asker = resolver(settings.dns_resolver_address)
    asker.lifetime = TIMEOUT - 1
    return asker


def expected(settings: Settings) -> Expected:
    """The relay domain's records, by the rules of custom domains (no ownership token:
    the relay's domain is its own)."""
    config = settings
    public = public_der(config.dkim_key_path)
    dkim = txt_value(public) if public is not None else ""
    return Expected(
        config.domain, "", config.dkim_selector, dkim, config.mail_hostname, config.domain
    )


async def relay_records(settings: Settings) -> list[Check]:
    """The relay domain's MX (its own and its subdomains'), SPF, DKIM and DMARC records."""
    wanted = expected(settings)
    asker = asker_for(settings)
    found = await look_up(asker, wanted)
    passed = judge(wanted, found, {})
    to_publish = {r.check: r for r in wanted.records()}

    def line(name: str, check: str, answered: object, fix: str) -> Check:
        if answered is None:
            return Check(name, False, "the DNS server did not answer; check MASKMAIL_DNS_RESOLVER")
        return Check(name, passed[check], "published" if passed[check] else fix)

    def publish(check: str) -> str:
        record = to_publish[check]
        value = f"{record.priority} {record.value}" if record.priority else record.value
        return f"publish {record.type} {record.name} {value}"

    dkim_fix = (
        publish("dkim") if wanted.dkim_txt else "no DKIM key to publish: run maskmail dkim generate"
    )
    mx = line("mx", "mx", found.mx_hosts, publish("mx"))
    if mx.ok:
        mx = await _wildcard_mx(asker, wanted)
    return [
        mx,
        _spf(wanted, found.domain_txt),
        line("dkim record", "dkim", found.dkim_txt, dkim_fix),
        # Not a custom domain's strict alignment: forwards from addresses at users'
        # subdomains are signed for the relay domain itself.
        line("dmarc", "dmarc", found.dmarc_txt, f"publish TXT {wanted.dmarc_name} {RELAY_DMARC}"),
    ]


async def _wildcard_mx(asker: dns.asyncresolver.Resolver, wanted: Expected) -> Check:
    """Addresses at users' subdomains need the wildcard MX of docs/deploy.md."""
    probe = f"{NOBODY_LABEL}.{wanted.domain}"
    try:
        answer = await asker.resolve(probe, "MX", search=False)
        hosts = [r.exchange.to_text(omit_final_dot=True).lower() for r in answer]
    except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
        hosts = []
    if wanted.mail_host.lower() in hosts:
        return Check("mx", True, "published, for subdomains too")
    return Check("mx", False, f"publish MX *.{wanted.domain} {MX_PRIORITY} {wanted.mail_host}")


def _spf(wanted: Expected, texts: list[str] | None) -> Check:
    """The relay's own SPF names its mail host (a custom domain's includes the relay's)."""
    if texts is None:
        return Check("spf", False, "the DNS server did not answer; check MASKMAIL_DNS_RESOLVER")
    spf = [t for t in texts if t.lower().startswith("v=spf1")]
    senders = {f"a:{wanted.mail_host.lower()}", "mx", "a"}
    ok = len(spf) == 1 and bool(senders & set(spf[0].lower().split()))
    fix = f"publish one TXT {wanted.domain} v=spf1 a:{wanted.mail_host} -all"
    return Check("spf", ok, "published" if ok else fix)


async def ptr(settings: Settings) -> list[Check]:
    """Every address of the mail host names it back: receivers refuse mail otherwise."""
    host = settings.mail_hostname
    asker = asker_for(settings)
    addresses = await _resolve(asker, host, "A") + await _resolve(asker, host, "AAAA")
    if not addresses:
        return [Check("ptr", False, f"{host} has no A or AAAA record: publish one")]
    wrong = []
    for address in addresses:
        names = await _resolve(asker, dns.reversename.from_address(address).to_text(), "PTR")
        if host.lower() not in (n.lower() for n in names):
            wrong.append(address)
    if wrong:
        return [
            Check(
                "ptr",
                False,
                f"the PTR of {', '.join(wrong)} is not {host}: ask your hosting provider to set it",
            )
        ]
    return [Check("ptr", True, f"{', '.join(addresses)} points back to {host}")]


async def _resolve(asker: dns.asyncresolver.Resolver, name: str, kind: str) -> list[str]:
    try:
        answer = await asker.resolve(name, kind, search=False)
    except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
        return []
    return [r.to_text().rstrip(".") for r in answer]


def public_der(path: Path) -> bytes | None:
    """The public half of the PEM private key at ``path``; None when there is none."""
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError):
        return None
    return key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
