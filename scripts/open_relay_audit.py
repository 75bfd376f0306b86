#!/usr/bin/env python3
"""Open-relay audit: the classic relay tricks against an SMTP port, each of which must fail.

Every probe asks the server to take mail for a mailbox outside the relay domain, dressed
up as one of the old tricks (percent hack, bang path, quoted local part, source route, IP
literal, case and trailing-dot variants, our own domain as the sender). A probe passes
when the server answers 5xx at RCPT, or never 250 at the end of DATA. The table goes to
stdout; the exit status is 1 when any probe was accepted, 2 when the server was
unreachable.

    scripts/open_relay_audit.py --host 127.0.0.1 --port 2525 --domain relay.example
"""

from __future__ import annotations

import argparse
import smtplib
import sys
from dataclasses import dataclass

FOREIGN = "victim@example.org"
FOREIGN_HOST = "example.org"


@dataclass(frozen=True)
class Probe:
    name: str
    sender: str
    recipient: str
    # A relay address the server does accept, sent first in the same transaction.
    first: str | None = None


@dataclass(frozen=True)
class Result:
    probe: Probe
    rcpt: str
    data: str
    accepted: bool


def probes(domain: str, ip: str, known: str | None) -> list[Probe]:
    """The classic tests; ``known`` (a real relay address) adds the ones that need it."""
    user = "victim"
    found = [
        Probe("foreign recipient, null sender", "", FOREIGN),
        Probe("foreign recipient, our domain as sender", f"postmaster@{domain}", FOREIGN),
        Probe("foreign recipient, foreign sender", "spammer@example.net", FOREIGN),
        Probe("percent hack", f"postmaster@{domain}", f"{user}%{FOREIGN_HOST}@{domain}"),
        Probe("percent hack, double", "", f"{user}%{FOREIGN_HOST}%{domain}@{domain}"),
        Probe("percent hack at IP literal", "", f"{user}%{FOREIGN_HOST}@[{ip}]"),
        Probe("bang path", f"postmaster@{domain}", f"{FOREIGN_HOST}!{user}@{domain}"),
        Probe("bang path, bare", "", f"{FOREIGN_HOST}!{user}"),
        Probe("bang path at IP literal", "", f"{FOREIGN_HOST}!{user}@[{ip}]"),
        Probe("quoted local part", f"postmaster@{domain}", f'"{FOREIGN}"@{domain}'),
        Probe("quoted local part, percent", "", f'"{user}%{FOREIGN_HOST}"@{domain}'),
        Probe("quoted local part, no domain", "", f'"{FOREIGN}"'),
        Probe("source route", f"postmaster@{domain}", f"@{domain}:{FOREIGN}"),
        Probe("source route, two hops", "", f"@{domain},@{FOREIGN_HOST}:{FOREIGN}"),
        Probe("source route at IP literal", "", f"@[{ip}]:{FOREIGN}"),
        Probe("IP literal recipient", "", f"{user}@[{ip}]"),
        Probe("IPv6 literal recipient", "", f"{user}@[IPv6:::1]"),
        Probe("foreign address at our domain", "", f"{FOREIGN}@{domain}"),
        Probe("uppercase foreign domain", f"postmaster@{domain}", FOREIGN.upper()),
        Probe("trailing-dot foreign domain", "", f"{FOREIGN}."),
        Probe("our domain as a label of a foreign one", "", f"{user}@{domain}.{FOREIGN_HOST}"),
        Probe("foreign domain ending like ours", "", f"{user}@evil{domain}"),
        Probe("subdomain of our domain", "", f"{user}@sub.{domain}"),
        Probe("no domain at all", "", user),
        Probe("empty recipient", "", ""),
        Probe("unicode foreign domain", "", f"{user}@xn--exmple-cua.org"),
    ]
    if known is not None:
        local = known.rpartition("@")[0]
        found += [
            Probe("foreign recipient, a relay address as sender", known, FOREIGN),
            Probe("foreign recipient after a valid one", "", FOREIGN, first=known),
            Probe("percent hack on a real address", "", f"{local}%{FOREIGN_HOST}@{domain}"),
            Probe("real address at an IP literal", "", f"{local}@[{ip}]"),
            Probe("source route to a foreign hop", "", f"@{FOREIGN_HOST}:{FOREIGN}", first=known),
        ]
    return found


def _line(code: int, text: bytes) -> str:
    return f"{code} {text.decode('utf-8', 'replace')}"[:60]


def run_probe(host: str, port: int, probe: Probe, timeout: float) -> Result:
    """One probe over one connection; raw commands, so no client library rewrites them."""
    with smtplib.SMTP(host, port, timeout=timeout) as client:
        client.ehlo("audit.example.net")
        code, text = client.docmd("MAIL", f"FROM:<{probe.sender}>")
        if code != 250:
            return Result(probe, f"(MAIL {_line(code, text)})", "-", False)
        if probe.first is not None:
            client.docmd("RCPT", f"TO:<{probe.first}>")
        code, text = client.docmd("RCPT", f"TO:<{probe.recipient}>")
        rcpt = _line(code, text)
        if 500 <= code < 600:
            return Result(probe, rcpt, "-", False)
        if probe.first is not None or code != 250:
            # The valid first recipient could carry the DATA; only this RCPT's answer
            # counts. Anything but a 5xx is not a refusal.
            return Result(probe, rcpt, "-", True)
        code, text = client.data(
            f"From: <{probe.sender}>\r\nTo: <{probe.recipient}>\r\n"
            "Subject: open relay audit\r\n\r\nIf you read this, the server relays.\r\n"
        )
        return Result(probe, rcpt, _line(code, text), code == 250)


def audit(host: str, port: int, domain: str, ip: str, known: str | None, timeout: float) -> int:
    results = [run_probe(host, port, p, timeout) for p in probes(domain, ip, known)]
    width = max(len(r.probe.name) for r in results)
    print(f"{'test':<{width}}  {'recipient':<44} {'verdict':<8} answer")
    for r in results:
        verdict = "ACCEPTED" if r.accepted else "refused"
        shown = r.probe.recipient or "<>"
        print(f"{r.probe.name:<{width}}  {shown[:44]:<44} {verdict:<8} {r.rcpt} {r.data}")
    accepted = sum(r.accepted for r in results)
    print(f"\n{len(results)} tests, {accepted} accepted")
    return 1 if accepted else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=2525)
    parser.add_argument("--domain", required=True, help="the relay domain (MASKMAIL_DOMAIN)")
    parser.add_argument("--ip", default=None, help="the server's IP, for IP literals")
    parser.add_argument("--known", default=None, help="a relay address the server accepts")
    parser.add_argument("--timeout", type=float, default=30)
    args = parser.parse_args(argv)
    try:
        return audit(
            args.host, args.port, args.domain, args.ip or args.host, args.known, args.timeout
        )
    except (OSError, smtplib.SMTPException) as exc:
        print(f"cannot audit {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
