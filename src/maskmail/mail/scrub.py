"""The owner's mailbox as a reader could meet it, found and replaced.

A mail client or a web page writes the same address in many ways: in any letter case,
each character as an HTML character reference (``&#x61;``, ``&#0064;``, ``&commat;``)
or percent-encoded in a URL. Each is matched, so each can be replaced.
"""

from __future__ import annotations

import re

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


class Scrubber:
    """Replaces one mailbox by another wherever it appears as an address, in any case."""

    def __init__(self, owner: str, relay: str) -> None:
        core = mailbox_pattern(owner)
        self._text = re.compile(core, re.IGNORECASE)
        self._bytes = re.compile(core.encode("utf-8"), re.IGNORECASE)
        self._anywhere = re.compile(mailbox_pattern(owner, bounded=False), re.IGNORECASE)
        # The address written plainly, for the final check: found with str.find (many
        # times faster than the patterns above), then its boundaries checked.
        self._plain = [spelling.lower() for spelling in spellings(owner)]
        self._plain_bounded = re.compile(
            rf"(?<![\w.+-])(?:{'|'.join(map(re.escape, self._plain))})(?![\w-]|\.[\w-])",
            re.IGNORECASE,
        )
        self._relay_local, _, self._relay_domain = relay.rpartition("@")
        self.ascii = all(spelling.isascii() for spelling in spellings(owner))

    def text(self, value: str) -> str:
        return self._text.sub(
            lambda m: f"{self._relay_local}{m.group('at')}{self._relay_domain}", value
        )

    def everywhere(self, value: str) -> str:
        """``text`` inside longer tokens too, for a file name like ``alice@x.com.vcf``."""
        return self._anywhere.sub(
            lambda m: f"{self._relay_local}{m.group('at')}{self._relay_domain}", value
        )

    def data(self, value: bytes) -> bytes:
        local, domain = self._relay_local.encode(), self._relay_domain.encode()
        return self._bytes.sub(lambda m: local + m.group("at") + domain, value)

    def in_plain(self, value: str, *, bounded: bool = True) -> bool:
        """The address written plainly in ``value``, in any case; inside longer tokens
        too when not ``bounded``."""
        lowered = value.lower()
        for plain in self._plain:
            start = lowered.find(plain)
            while start >= 0:
                window = lowered[max(start - 1, 0) : start + len(plain) + 2]
                if not bounded or self._plain_bounded.search(window):
                    return True
                start = lowered.find(plain, start + 1)
        return False

    def found_in(self, value: bytes) -> bool:
        return self._bytes.search(value) is not None

    def seen_in(self, text: str) -> bool:
        """The mailbox in ``text``, even inside a longer token (a message id)."""
        return self._anywhere.search(text) is not None
