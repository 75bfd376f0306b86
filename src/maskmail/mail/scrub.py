"""The owner's mailboxes as a reader could meet them, found and replaced.

A mail client or a web page writes the same address in many ways: in any letter case,
each character as an HTML character reference (``&#x61;``, ``&#0064;``, ``&commat;``)
or percent-encoded in a URL. Each is matched, so each can be replaced.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Named HTML references for the punctuation an address holds.
_NAMED = {"@": ("&commat;",), ".": ("&period;",), "-": ("&hyphen;", "&dash;"), "_": ("&lowbar;",)}


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


def mailbox_pattern(mailbox: str, *, bounded: bool = True) -> str:
    """The regular expression (to compile with IGNORECASE) for ``mailbox`` in each of
    its spellings; the ``@`` is group ``at``. Bounded, it skips longer addresses that
    merely contain the mailbox (``malice@x``, ``alice@x.evil``)."""
    local, _, _ = mailbox.rpartition("@")
    domains = "|".join(
        "".join(_forms(c) for c in spelling.rpartition("@")[2]) for spelling in spellings(mailbox)
    )
    core = "".join(_forms(c) for c in local) + f"(?P<at>{_forms('@')})(?:{domains})"
    if not bounded:
        return core
    return rf"(?<![\w.+-]){core}(?![\w-]|\.[\w-])"


class _Pattern:
    """One mailbox's patterns."""

    def __init__(self, mailbox: str) -> None:
        core = mailbox_pattern(mailbox)
        self.text = re.compile(core, re.IGNORECASE)
        self.bytes = re.compile(core.encode("utf-8"), re.IGNORECASE)
        self.anywhere = re.compile(mailbox_pattern(mailbox, bounded=False), re.IGNORECASE)
        # The address written plainly, for the final check: found with str.find (many
        # times faster than the patterns above), then its boundaries checked.
        self.plain = [spelling.lower() for spelling in spellings(mailbox)]
        self.plain_bounded = re.compile(
            rf"(?<![\w.+-])(?:{'|'.join(map(re.escape, self.plain))})(?![\w-]|\.[\w-])",
            re.IGNORECASE,
        )
        self.ascii = all(spelling.isascii() for spelling in spellings(mailbox))

    def in_plain(self, lowered: str, bounded: bool) -> bool:
        for plain in self.plain:
            start = lowered.find(plain)
            while start >= 0:
                window = lowered[max(start - 1, 0) : start + len(plain) + 2]
                if not bounded or self.plain_bounded.search(window):
                    return True
                start = lowered.find(plain, start + 1)
        return False


class Scrubber:
    """Replaces every one of the owner's mailboxes by the relay address wherever it
    appears as an address, in any case: a reply may quote any of them, not only the one
    it was sent from."""

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
        """An address written plainly in ``value``, in any case; inside longer tokens
        too when not ``bounded``."""
        lowered = value.lower()
        return any(p.in_plain(lowered, bounded) for p in self._patterns)

    def found_in(self, value: bytes) -> bool:
        return any(p.bytes.search(value) is not None for p in self._patterns)

    def seen_in(self, text: str) -> bool:
        """A mailbox in ``text``, even inside a longer token (a message id)."""
        return any(p.anywhere.search(text) is not None for p in self._patterns)
