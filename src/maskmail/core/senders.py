"""Is this the owner? Sender addresses compared as mail systems compare them, and the
trusted relay's ``Authentication-Results`` read with authres (RFC 8601)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum

import authres

from maskmail.core.envelope import Mailbox, normal_domain, parse_mailbox
from maskmail.core.errors import InvalidAddress


def mailbox_key(address: str) -> tuple[str, str] | None:
    """The form two addresses are compared in; None for anything unparseable.

    The domain is compared case-insensitively, as DNS does. The local part is compared
    whole, in lower case (users are unique regardless of case): ``alice+x`` stays a
    different mailbox from ``alice``, so no sub-address lets a stranger in.
    """
    try:
        mailbox: Mailbox = parse_mailbox(address.strip())
    except InvalidAddress:
        return None
    try:
        domain = mailbox.domain.encode("idna").decode("ascii")
    except UnicodeError:
        return None
    return mailbox.local.lower(), domain


def same_mailbox(one: str, other: str) -> bool:
    key = mailbox_key(one)
    return key is not None and key == mailbox_key(other)


class Authentication(StrEnum):
    PASS = "pass"  # noqa: S105 (not a password): SPF or DKIM passed for the owner's domain
    FAIL = "fail"  # results were given, and none passed for the owner's domain
    ABSENT = "absent"  # the relay reported no SPF or DKIM result at all
    UNFINISHED = "unfinished"  # none passed, and a check could not finish (temperror)


_CHECKED = frozenset({"spf", "dkim"})
# authres takes quadratic time in the number of results; a real
# header, even with ARC and DMARC results, is a small fraction of this.
MAX_HEADER = 8192


def _domain_of(value: str) -> str:
    return normal_domain(value.rpartition("@")[2]).lstrip(".")


def _aligned(signer: str, owner_domain: str) -> bool:
    """The signing domain is the owner's domain or a parent of it (relaxed alignment)."""
    return (
        bool(signer)
        and "." in signer
        and (owner_domain == signer or owner_domain.endswith("." + signer))
    )


def _passes(result: authres.core.AuthenticationResult, owner_domain: str) -> bool:
    if str(result.result).lower() != "pass":
        return False
    found = {(p.type.lower(), p.name.lower()): str(p.value) for p in result.properties}
    if result.method.lower() == "spf":
        mail_from = found.get(("smtp", "mailfrom"), "")
        return _domain_of(mail_from) == owner_domain
    signer = found.get(("header", "d"), "") or _domain_of(found.get(("header", "i"), ""))
    return _aligned(normal_domain(signer).lstrip("."), owner_domain)


def _parse(value: str) -> authres.AuthenticationResultsHeader | None:
    if len(value) > MAX_HEADER:
        return None
    unfolded = " ".join(value.split())
    try:
        return authres.AuthenticationResultsHeader.parse(f"Authentication-Results: {unfolded}")
    except authres.core.AuthResError:
        return None


def authentication(
    values: Sequence[str], owner_domain: str, authserv_ids: Iterable[str] = ()
) -> Authentication:
    """What the trusted relay's ``Authentication-Results`` say about the owner's domain.

    ``values`` are the header values in message order, newest first. Only one header
    decides: without ``authserv_ids`` the newest one, which the trusted relay added;
    with them, the newest one from those hosts (a sender can forge a header with the
    same id below the relay's own, so a later one never counts). A header that should
    decide but cannot be parsed (or is too long to) fails: it is never read as absent.
    """
    ids = {i.strip().lower() for i in authserv_ids if i.strip()}
    owner_domain = owner_domain.lower()
    header = None
    for value in values if ids else values[:1]:
        header = _parse(value)
        if header is None:
            if ids:
                continue  # whose it is cannot be told
            return Authentication.FAIL
        if not ids or str(header.authserv_id).lower() in ids:
            break
        header = None
    if header is None:
        return Authentication.ABSENT
    results = [r for r in header.results if r.method.lower() in _CHECKED]
    if any(_passes(r, owner_domain) for r in results):
        return Authentication.PASS
    if any(str(r.result).lower() == "temperror" for r in results):
        return Authentication.UNFINISHED
    return Authentication.FAIL if results else Authentication.ABSENT
