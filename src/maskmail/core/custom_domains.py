"""Custom domain rules: which names may be added, the DNS records that prove and serve
them, and how the answers found in DNS are judged. The look-ups themselves are
``maskmail.dnscheck``'s."""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass

from maskmail.core.envelope import MAX_DOMAIN, normal_domain
from maskmail.core.errors import InvalidAddress
from maskmail.core.mailboxes import notice

CHECKS = ("ownership", "mx", "spf", "dkim", "dmarc")
OWNERSHIP_PREFIX = "maskmail-verification="
MX_PRIORITY = 10
# What SimpleLogin suggests: strict alignment, failures quarantined.
DMARC_VALUE = "v=DMARC1; p=quarantine; adkim=s; aspf=s"
_DMARC_POLICIES = frozenset({"quarantine", "reject"})
_FIELD = {"field": "domain"}


def check_domain(raw: str) -> str:
    """The domain in the form it is kept (lower case, A-labels, no final dot), if it may
    be added; otherwise InvalidAddress saying why."""
    name = normal_domain(raw)
    try:
        ascii_name = name.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise InvalidAddress("the domain is not a valid host name", _FIELD) from exc
    labels = ascii_name.split(".")
    if len(labels) < 2 or len(ascii_name) > MAX_DOMAIN - 2:
        raise InvalidAddress("a domain has at least two labels, like example.org", _FIELD)
    if not all(_is_label(label) for label in labels) or labels[-1].isdigit():
        raise InvalidAddress("the domain is not a valid host name", _FIELD)
    return ascii_name


def _is_label(label: str) -> bool:
    return (
        0 < len(label) <= 63
        and not label.startswith("-")
        and not label.endswith("-")
        and all(c.isascii() and (c.isalnum() or c == "-") for c in label)
    )


def is_within(domain: str, parents: Iterable[str]) -> bool:
    """True when ``domain`` is one of ``parents`` or below one of them."""
    return any(domain == p or domain.endswith(f".{p}") for p in parents)


def refuse_relay_domain(domain: str, relay_domains: Set[str]) -> None:
    """The relay's own domains, and hosts below them, are the relay's, not a user's."""
    if is_within(domain, relay_domains):
        raise InvalidAddress("this domain belongs to the relay", _FIELD)


@dataclass(frozen=True, slots=True)
class Record:
    """One DNS record to create; ``priority`` is an MX record's only."""

    check: str
    type: str
    name: str
    value: str
    priority: int | None = None

    def json(self) -> dict[str, object]:
        return {
            "check": self.check,
            "type": self.type,
            "name": self.name,
            "value": self.value,
            "priority": self.priority,
        }


@dataclass(frozen=True, slots=True)
class Expected:
    """What DNS must hold for one domain, and where the relay sends and receives."""

    domain: str
    token: str
    selector: str
    dkim_txt: str  # v=DKIM1; k=rsa; p=...
    mail_host: str  # the relay's MX host
    spf_domain: str  # the relay's domain, whose SPF record lists its senders

    @property
    def ownership_txt(self) -> str:
        return f"{OWNERSHIP_PREFIX}{self.token}"

    @property
    def spf_txt(self) -> str:
        return f"v=spf1 include:{self.spf_domain} ~all"

    @property
    def dkim_name(self) -> str:
        return f"{self.selector}._domainkey.{self.domain}"

    @property
    def dmarc_name(self) -> str:
        return f"_dmarc.{self.domain}"

    def records(self) -> list[Record]:
        return [
            Record("ownership", "TXT", self.domain, self.ownership_txt),
            Record("mx", "MX", self.domain, self.mail_host, MX_PRIORITY),
            Record("spf", "TXT", self.domain, self.spf_txt),
            Record("dkim", "TXT", self.dkim_name, self.dkim_txt),
            Record("dmarc", "TXT", self.dmarc_name, DMARC_VALUE),
        ]


@dataclass(frozen=True, slots=True)
class CustomDomain:
    """A user's domain as kept; the private key stays in the store and the mail plane."""

    id: int
    user_id: int
    domain: str
    verified: bool
    catch_all: bool
    token: str
    selector: str
    dkim_txt: str
    checks: dict[str, bool]
    created_time: int
    warned_time: int | None

    def expected(self, *, mail_host: str, spf_domain: str) -> Expected:
        return Expected(
            self.domain, self.token, self.selector, self.dkim_txt, mail_host, spf_domain
        )


@dataclass(frozen=True, slots=True)
class Found:
    """What DNS answered; None where the look-up failed for now (a timeout, SERVFAIL),
    as opposed to an empty list: the name or the record does not exist."""

    domain_txt: list[str] | None
    mx_hosts: list[str] | None
    dkim_txt: list[str] | None
    dmarc_txt: list[str] | None


def _tags(value: str) -> dict[str, str]:
    tags = {}
    for part in value.split(";"):
        key, eq, tag = part.partition("=")
        if eq:
            tags[key.strip().lower()] = tag.strip()
    return tags


def judge(expected: Expected, found: Found, before: dict[str, bool]) -> dict[str, bool]:
    """Each check passed or not; a look-up that failed for now keeps its last result."""
    spf = [t for t in found.domain_txt or [] if t.lower().startswith("v=spf1")]
    include = f"include:{expected.spf_domain}".lower()
    wanted_key = _tags(expected.dkim_txt).get("p")
    results = {
        "ownership": None
        if found.domain_txt is None
        else expected.ownership_txt in (t.strip() for t in found.domain_txt),
        "mx": None
        if found.mx_hosts is None
        else normal_domain(expected.mail_host) in map(normal_domain, found.mx_hosts),
        # Exactly one SPF record (RFC 7208 makes two a permanent error) that includes us.
        "spf": None
        if found.domain_txt is None
        else len(spf) == 1 and include in spf[0].lower().split(),
        "dkim": None
        if found.dkim_txt is None
        else any(_tags(t).get("p", "").replace(" ", "") == wanted_key for t in found.dkim_txt),
        "dmarc": None
        if found.dmarc_txt is None
        else any(
            _tags(t).get("v") == "DMARC1" and _tags(t).get("p", "").lower() in _DMARC_POLICIES
            for t in found.dmarc_txt
        ),
    }
    return {name: before.get(name, False) if ok is None else ok for name, ok in results.items()}


def went_away(before: dict[str, bool], after: dict[str, bool]) -> list[str]:
    """The checks that passed before and fail now: records someone removed or changed."""
    return [name for name in CHECKS if before.get(name) and not after.get(name)]


def warning_message(*, to: str, sender: str, domain: str, gone: list[str], when: float) -> bytes:
    """The message that tells the owner their domain's records went away."""
    names = ", ".join(n if n == "ownership" else n.upper() for n in gone)
    return notice(
        to=to,
        sender=sender,
        subject=f"The DNS records of {domain} changed",
        when=when,
        text=f"These checks of {domain} no longer pass: {names}.\n\n"
        "Mail to your addresses there may be lost, or land in spam, until the records "
        "are back. The records to publish are listed with the domain "
        "(GET /v3/relay/domains).\n",
    )
