"""The owner's mailboxes as a reader could meet them, found and replaced.

A mail client or a web page writes the same address in many ways: in any letter case,
with any sub-address tag (``alice+news@``, RFC 5233), each character as an HTML
character reference (``&#x61;``, ``&#0064;``, ``&commat;``) or percent-encoded in a URL,
and split by a fold (a line break and white space, which a reader of a header, a
calendar or a card joins again: RFC 5322, 5545, 6350). Each is matched, so each can be
replaced.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Named HTML references for the punctuation an address holds.
_NAMED = {
    "@": ("&commat;",),
    ".": ("&period;",),
    "-": ("&hyphen;", "&dash;"),
    "_": ("&lowbar;",),
    "+": ("&plus;",),
}
# A fold: a line break and the white space that continues the logical line.
FOLD = re.compile(r"\r?\n[ \t]+")
_FOLD = r"(?:\r?\n[ \t]+)?"
# A character of a sub-address tag: what a local part may hold (RFC 5322 atext and the
# dot), or one written as an HTML or URL escape.
_TAG_CHAR = (
    r"(?:[\w.!#$'*+/=?^`{|}~-]|&#0*[0-9]{1,7};|&#x0*[0-9a-f]{1,6};|&[a-z]{2,8};|%[0-9a-f]{2})"
)
# A local part is at most 64 octets (RFC 5321), which also bounds the backtracking.
_TAG_MAX = 64
_PLAIN_TAG = rf"(?:\+[\w.!#$'*+/=?^`{{|}}~-]{{0,{_TAG_MAX}}})?"
# Before an address: not part of a longer local part, unless an escape of a calendar,
# a card or JSON (``\n``) ends the word before it.
_BEFORE = r"(?:(?<=\\[nrtbf])|(?<![\w.+-]))"
# After it: not a longer domain.
_AFTER = r"(?![\w-]|\.[\w-])"


def _forms(char: str) -> str:
    """A pattern for one character of the address, in every way it may be written."""
    code_points = sorted({ord(c) for c in (char, char.lower(), char.upper()) if len(c) == 1})
    forms = [re.escape(char)]
    for point in code_points:
        forms.append(f"&#0*{point};")
        forms.append(f"&#x0*{point:x};")
        if point < 128:
            forms.append(f"%{point:02x}")
    forms.extend(re.escape(name) for name in _NAMED.get(char, ()))
    return "(?:" + "|".join(forms) + ")"


def _written(chars: str) -> str:
    """``chars`` in every way each may be written, a fold allowed between any two."""
    return _FOLD.join(_forms(c) for c in chars)


def base_local(mailbox: str) -> str:
    """The local part without its sub-address tag: ``alice+relay@`` is ``alice``'s, and
    so is every other tag of it."""
    local = mailbox.rpartition("@")[0]
    return local.partition("+")[0] or local


def spellings(mailbox: str) -> list[str]:
    """The mailbox with its domain as Unicode and as IDNA (``bücher`` is
    ``xn--bcher-kva``): a client may write either."""
    local, _, domain = mailbox.rpartition("@")
    domains = {domain.lower()}
    for codec, encode in (("idna", True), ("idna", False)):
        try:
            domains.add(
                domain.encode(codec).decode("ascii")
                if encode
                else domain.encode("ascii").decode(codec)
            )
        except UnicodeError:
            continue
    return [f"{local}@{d.lower()}" for d in sorted(domains)]


def _domains(mailbox: str) -> list[str]:
    return [spelling.rpartition("@")[2] for spelling in spellings(mailbox)]


def mailbox_pattern(mailbox: str, *, bounded: bool = True) -> str:
    """The regular expression (to compile with IGNORECASE) for ``mailbox`` in each of
    its spellings, with any tag; the ``@`` is group ``at``. Bounded, it skips longer
    addresses that merely contain the mailbox (``malice@x``, ``alice@x.evil``)."""
    domains = "|".join(_written(domain) for domain in _domains(mailbox))
    tag = f"(?:{_FOLD}{_forms('+')}(?:{_FOLD}{_TAG_CHAR}){{0,{_TAG_MAX}}})?"
    at = f"{_FOLD}(?P<at>{_forms('@')}){_FOLD}"
    local = base_local(mailbox)
    core = f"{_written(local)}{tag}{at}(?:{domains})"
    if not bounded:
        return core
    # The first character looked at alone first: at most places it rules the match out
    # faster than the boundary's look behind does.
    first = "".join(sorted({re.escape(c) for c in (local[:1], local[:1].upper(), "&", "%")}))
    return f"(?=[{first}]){_BEFORE}{core}{_AFTER}"


class _Pattern:
    """One mailbox's patterns."""

    def __init__(self, mailbox: str) -> None:
        core = mailbox_pattern(mailbox)
        self.text = re.compile(core, re.IGNORECASE)
        self.bytes = re.compile(core.encode("utf-8"), re.IGNORECASE)
        self.anywhere = re.compile(mailbox_pattern(mailbox, bounded=False), re.IGNORECASE)
        # The address written plainly, for the final check: its local part found with
        # str.find, which scans far more cheaply than the patterns above, then matched
        # there.
        domains = _domains(mailbox)
        self.base = base_local(mailbox).lower()
        self.at_domains = ["@" + domain for domain in domains]
        plain = f"{re.escape(self.base)}{_PLAIN_TAG}@(?:{'|'.join(map(re.escape, domains))})"
        self.plain_bounded = re.compile(f"{_BEFORE}{plain}{_AFTER}", re.IGNORECASE)
        self.plain_anywhere = re.compile(plain, re.IGNORECASE)
        self.ascii = mailbox.isascii() and all(domain.isascii() for domain in domains)

    def in_plain(self, lowered: str, bounded: bool) -> bool:
        if not any(domain in lowered for domain in self.at_domains):
            return False
        pattern = self.plain_bounded if bounded else self.plain_anywhere
        start = lowered.find(self.base)
        while start >= 0:
            if pattern.match(lowered, start):
                return True
            start = lowered.find(self.base, start + 1)
        return False


class Scrubber:
    """Replaces every one of the owner's mailboxes by the relay address wherever it
    appears as an address, in any case and with any tag: a reply may quote any of them,
    not only the one it was sent from."""

    def __init__(self, owners: Iterable[str], relay: str) -> None:
        self._patterns = [_Pattern(m) for m in dict.fromkeys(o.lower() for o in owners)]
        self._relay_local, _, self._relay_domain = relay.rpartition("@")
        self.ascii = all(p.ascii for p in self._patterns)

    def _relay(self, m: re.Match[str]) -> str:
        return f"{self._relay_local}{m.group('at')}{self._relay_domain}"

    def text(self, value: str) -> str:
        for pattern in self._patterns:
            value = pattern.text.sub(self._relay, value)
        return value

    def everywhere(self, value: str) -> str:
        """``text`` inside longer tokens too, for a file name like ``alice@x.com.vcf``."""
        for pattern in self._patterns:
            value = pattern.anywhere.sub(self._relay, value)
        return value

    def data(self, value: bytes) -> bytes:
        local, domain = self._relay_local.encode(), self._relay_domain.encode()
        for pattern in self._patterns:
            value = pattern.bytes.sub(lambda m: local + m.group("at") + domain, value)
        return value

    def in_plain(self, value: str, *, bounded: bool = True) -> bool:
        """An address written plainly in ``value``, in any case and with any tag; inside
        longer tokens too when not ``bounded``."""
        lowered = value.lower()
        return any(p.in_plain(lowered, bounded) for p in self._patterns)

    def found_in(self, value: bytes) -> bool:
        return any(p.bytes.search(value) is not None for p in self._patterns)

    def seen_in(self, text: str) -> bool:
        """A mailbox in ``text``, even inside a longer token (a message id)."""
        return any(p.anywhere.search(text) is not None for p in self._patterns)
