"""Relay subdomain rules (Locker's contract): the name's shape, the names kept for the
relay's own hosts, the blocklist, the tombstone, and how often a user may take a name."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from maskmail.core.addresses import is_blocked, tombstone
from maskmail.core.envelope import normal_domain
from maskmail.core.errors import InvalidAddress
from maskmail.core.windows import DAY, check_day

MIN_LENGTH = 3
MAX_LENGTH = 63
# One DNS label of [a-z0-9-], neither starting nor ending with a hyphen.
NAME_PATTERN = r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$"
_LABEL = re.compile(NAME_PATTERN.strip("^$"))
# Host names a mail or web service publishes under its domain (mail clients' automatic
# set-up, MTA-STS, name servers, ...): a user holding one could pass for the relay.
INFRASTRUCTURE: frozenset[str] = frozenset(
    {
        "api", "app", "autoconfig", "autodiscover", "bounce", "bounces", "cdn", "dashboard",
        "dkim", "dmarc", "email", "ftp", "imap", "imaps", "localhost", "mail", "mailer",
        "mta-sts", "mx", "ns", "pop", "pop3", "pop3s", "relay", "smtp", "smtps", "spf",
        "static", "status", "submission", "webmail", "www",
    }
)  # fmt: skip
# The same names numbered, as services number their hosts: mx1, ns2, smtp-3, mail01.
_NUMBERED = re.compile(r"(?P<base>[a-z][a-z0-9-]*?)-?[0-9]+")
# A day: the window of ``names_per_day``.
NAME_WINDOW = DAY


def own_label(host: str, domain: str) -> str | None:
    """The label of ``host`` right under ``domain`` (``mx`` of ``a.mx.relay.example``
    under ``relay.example``): the subdomain that would hold the relay's own host."""
    host, domain = normal_domain(host), normal_domain(domain)
    if not host.endswith(f".{domain}"):
        return None
    return host[: -len(domain) - 1].rsplit(".", 1)[-1]


def is_reserved(name: str, own: Collection[str] = ()) -> bool:
    """True for an infrastructure name, numbered or not, and for ``own`` (the labels of
    the relay's own hosts)."""
    numbered = _NUMBERED.fullmatch(name)
    base = numbered["base"] if numbered else name
    return name in own or name in INFRASTRUCTURE or base in INFRASTRUCTURE


def _shape_problem(name: str) -> str | None:
    """What is wrong with the name's letters, said so that the user can fix it."""
    if _LABEL.fullmatch(name):
        return None
    plain = name.strip(".").lower()
    if "." in name:
        hint = f" (such as {plain!r})" if _LABEL.fullmatch(plain) else ""
        return f"a subdomain is one name without dots{hint}; the relay's domain is added for you"
    if name != name.lower() and _LABEL.fullmatch(plain):
        return f"a subdomain is written in lower case: {plain!r}, not {name!r}"
    if name.startswith("-") or name.endswith("-"):
        return "a subdomain may not start or end with '-'"
    return "a subdomain is lower-case letters, digits and '-' only"


def check_subdomain(name: str, own: Collection[str] = ()) -> str:
    """The name if it may be claimed as written; otherwise InvalidAddress saying why.

    Upper case and dots are refused rather than folded or trimmed, as Locker does: what
    the user typed is what their addresses will show, so they are told what to type.
    ``own``: labels kept for the relay's own hosts (``own_label``).
    """
    detail = {"field": "subdomain"}
    if not MIN_LENGTH <= len(name) <= MAX_LENGTH:
        raise InvalidAddress(f"a subdomain is {MIN_LENGTH} to {MAX_LENGTH} characters long", detail)
    problem = _shape_problem(name)
    if problem is not None:
        raise InvalidAddress(problem, detail)
    if is_blocked(name) or is_reserved(name, own):
        raise InvalidAddress("this subdomain is not available", detail)
    return name


def check_name_rate(recent: list[int], per_day: int, now: int) -> None:
    """RateLimited when the user took ``per_day`` names (claims and renames) within a
    day; ``recent`` are those times, newest last. 0 is no limit."""
    check_day(recent, per_day, now, f"this account took {per_day} subdomain names in a day")


def subdomain_tombstone(name: str, domain: str) -> str:
    """The hash kept forever once a subdomain was claimed, so it is never reissued.

    It is the address tombstone of the host name: a host has no '@', so it never equals
    an address's.
    """
    return tombstone(f"{name}.{domain}")


@dataclass(frozen=True, slots=True)
class Subdomain:
    id: int
    user_id: int
    subdomain: str
    catch_all: bool
    created_time: int
