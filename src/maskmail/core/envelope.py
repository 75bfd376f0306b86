"""Envelope addresses as the mail plane receives them: checked, split, and placed."""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass
from enum import StrEnum

from maskmail.core import bounce_addresses, reverse
from maskmail.core.errors import InvalidAddress, MaskmailError

MAX_LOCAL = 64
MAX_DOMAIN = 255
MAX_ADDRESS = 254
# Characters that have no place in an envelope address: line breaks would let a client
# inject commands or headers further down the line; the rest are never valid.
FORBIDDEN = frozenset('\r\n\x00\t <>()[]\\,;:"')


@dataclass(frozen=True, slots=True)
class Mailbox:
    local: str
    domain: str

    def __str__(self) -> str:
        return f"{self.local}@{self.domain}"


def normal_domain(raw: str) -> str:
    """A domain in the one form it is kept and compared in: no surrounding space, lower
    case, no final dot, so that ``Shop.Example.`` and ``shop.example`` are one domain at
    every door. Whether it is a valid host name is each caller's own rule."""
    return raw.strip().lower().rstrip(".")


def has_line_break(value: str) -> bool:
    return "\r" in value or "\n" in value or "\x00" in value


def parse_mailbox(raw: str) -> Mailbox:
    """Split ``local@domain``, lower-casing the domain; InvalidAddress when malformed."""
    if has_line_break(raw):
        raise InvalidAddress("an address may not contain CR, LF or NUL")
    if len(raw) > MAX_ADDRESS:
        raise InvalidAddress("the address is too long")
    local, at, domain = raw.rpartition("@")
    if not at or not local or not domain:
        raise InvalidAddress("an address needs a local part and a domain")
    if any(c in FORBIDDEN or ord(c) < 32 or ord(c) == 127 for c in local):
        raise InvalidAddress("the local part contains a forbidden character")
    if len(local.encode("utf-8", "surrogateescape")) > MAX_LOCAL:
        raise InvalidAddress("the local part is too long")
    if local.startswith(".") or local.endswith(".") or ".." in local:
        raise InvalidAddress("the local part has a misplaced dot")
    return Mailbox(local, _check_domain(domain))


def _check_domain(domain: str) -> str:
    if any(c.isspace() for c in domain):
        raise InvalidAddress("the domain is not a valid host name")
    domain = normal_domain(domain)
    try:
        ascii_domain = domain.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise InvalidAddress("the domain is not a valid host name") from exc
    labels = ascii_domain.split(".")
    if len(ascii_domain) > MAX_DOMAIN or not all(
        label
        and len(label) <= 63
        and not label.startswith("-")
        and not label.endswith("-")
        and all(c.isascii() and (c.isalnum() or c == "-") for c in label)
        for label in labels
    ):
        raise InvalidAddress("the domain is not a valid host name")
    return domain


def is_ours(mailbox: Mailbox, domains: Set[str]) -> bool:
    """True when the mailbox is at one of the relay's domains (lower case), or at a
    subdomain of one: the only mail we accept."""
    return placed(mailbox, domains) is not None


def placed(mailbox: Mailbox, domains: Set[str]) -> tuple[str, str | None] | None:
    """The served domain and relay subdomain (or None) the mailbox is at; None when it is
    not ours. A subdomain is one label, as users claim them. ``domains`` is a set, never
    a string, in which ``in`` would match any substring."""
    if mailbox.domain in domains:
        return mailbox.domain, None
    label, dot, parent = mailbox.domain.partition(".")
    if dot and label and parent in domains:
        return parent, label
    return None


class Kind(StrEnum):
    """Which path a recipient's mail takes, by the form of its local part."""

    ADDRESS = "address"  # a relay address: forwarded to its owner
    REVERSE_ALIAS = "reverse alias"  # the owner replying to an outside sender
    BOUNCE = "bounce"  # a signed bounce address: a delivery report coming back


@dataclass(frozen=True, slots=True)
class Located:
    """A recipient read once, at RCPT: everything the mail plane routes it by."""

    mailbox: Mailbox
    # ``local@domain``, the domain in its normal form: what the envelope carries on.
    address: str
    kind: Kind
    # The relay's domain and relay subdomain (or None) it is at; None when it is at no
    # domain of the relay's (a user's custom domain, or a foreign one).
    place: tuple[str, str | None] | None


def locate(raw: str, domains: Set[str]) -> Located:
    """The recipient ``raw``, parsed (InvalidAddress when malformed), its kind and where
    it is; whether a domain that is not the relay's is received for is the caller's
    question (a custom domain lives in the database)."""
    mailbox = parse_mailbox(raw)
    if mailbox.local.lower().startswith(f"{bounce_addresses.PREFIX}+"):
        kind = Kind.BOUNCE
    elif reverse.is_alias_local(mailbox.local):
        kind = Kind.REVERSE_ALIAS
    else:
        kind = Kind.ADDRESS
    return Located(mailbox, str(mailbox), kind, placed(mailbox, domains))


def ours_among(raws: Iterable[str], domains: Set[str]) -> frozenset[str]:
    """Those of ``raws`` that are addresses at the relay's domains (or a subdomain of
    one): a mailbox there would send a forward back into the relay. A malformed one is
    not ours."""
    found = set()
    for raw in raws:
        try:
            if is_ours(parse_mailbox(raw), domains):
                found.add(raw)
        except MaskmailError:
            continue
    return frozenset(found)


def check_sender(raw: str) -> str:
    """The MAIL FROM address: empty (a bounce) is fine, line breaks are not."""
    if has_line_break(raw):
        raise InvalidAddress("an address may not contain CR, LF or NUL")
    return raw
