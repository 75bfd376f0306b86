"""OpenPGP data in a reply read as its packets, for what anyone who decodes it can see.

A key block's user ids ("Alice <alice@example.com>"), a signature's signer's user id
and an unencrypted message's text sit in packets (RFC 9580), base64-encoded in the
ASCII armor and often compressed, so no search of the armored text finds them. Each
packet is read, compressed ones inflated (up to a bound) and read in turn; encrypted
data is skipped, since only the recipient's key shows it. What does not read as
packets cannot be shown to be free of the owner's address, so it is refused.
"""

from __future__ import annotations

import base64
import binascii
import bz2
import hashlib
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from maskmail.core.errors import Unrewritable

# An armor line (RFC 9580 6.2), also quoted ("> ") or dash-escaped inside a
# clear-signed text ("- "): a block's lines carry the prefix of its first line.
_EDGE = re.compile(
    r"^(?P<prefix>(?:[ \t>]|- )*)-----(?P<edge>BEGIN|END) PGP (?P<kind>[A-Z0-9 ,/]{1,40})-----",
    re.MULTILINE,
)
BEGIN = "-----BEGIN PGP "
_HEADER_LINE = re.compile(r"[\x21-\x39\x3b-\x7e]+: ")
_CHECKSUM = re.compile(r"=[A-Za-z0-9+/]{4}")
# Packets whose body only the recipient's key opens: symmetrically encrypted data,
# with or without integrity protection, and AEAD data.
_ENCRYPTED = frozenset({9, 18, 20})
_COMPRESSED = 8
# Inflating compressed packets: how much in all for one message, and how deep they may nest.
MAX_INFLATED = 32 * 1024 * 1024
_MAX_DEPTH = 8
# The media types whose body is OpenPGP data, armored or binary (RFC 3156).
OPENPGP_TYPES = frozenset({"application/pgp-keys", "application/pgp-signature", "application/pgp"})


def _bad(what: str) -> Unrewritable:
    return Unrewritable(f"OpenPGP data that does not read as packets: {what}")


@dataclass
class _Budget:
    left: int = MAX_INFLATED

    def spend(self, size: int) -> None:
        self.left -= size
        if self.left < 0:
            raise Unrewritable("OpenPGP data that inflates past the bound")


def _length(data: bytes, pos: int, size: int) -> tuple[int, int]:
    end = pos + size
    if end > len(data):
        raise _bad("a length runs past the end")
    return int.from_bytes(data[pos:end], "big"), end


def _chunk(data: bytes, pos: int, length: int) -> tuple[bytes, int]:
    end = pos + length
    if end > len(data):
        raise _bad("a body runs past the end")
    return data[pos:end], end


def _new_format_body(data: bytes, pos: int) -> tuple[bytes, int]:
    """A body after a new-format header, its partial chunks joined (RFC 9580 4.2.1)."""
    chunks = []
    while True:
        first, pos = _length(data, pos, 1)
        if first < 192:
            chunk, pos = _chunk(data, pos, first)
        elif first < 224:
            second, pos = _length(data, pos, 1)
            chunk, pos = _chunk(data, pos, ((first - 192) << 8) + second + 192)
        elif first == 255:
            length, pos = _length(data, pos, 4)
            chunk, pos = _chunk(data, pos, length)
        else:
            chunk, pos = _chunk(data, pos, 1 << (first & 0x1F))
            chunks.append(chunk)
            continue
        chunks.append(chunk)
        return b"".join(chunks), pos


def packets(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Each packet's tag and whole body; Unrewritable where ``data`` is not packets."""
    pos = 0
    if not data:
        raise _bad("nothing in it")
    while pos < len(data):
        head = data[pos]
        pos += 1
        if not head & 0x80:
            raise _bad("a byte that starts no packet")
        if head & 0x40:
            tag = head & 0x3F
            body, pos = _new_format_body(data, pos)
        else:
            tag, kind = (head >> 2) & 0x0F, head & 0x03
            if kind == 3:
                body, pos = data[pos:], len(data)
            else:
                length, pos = _length(data, pos, (1, 2, 4)[kind])
                body, pos = _chunk(data, pos, length)
        if tag == 0:
            raise _bad("the reserved tag 0")
        yield tag, body


def _inflate(body: bytes, budget: _Budget) -> bytes:
    """A compressed packet's content (RFC 9580 5.6): none, ZIP, ZLIB or BZip2."""
    if not body:
        raise _bad("an empty compressed packet")
    algorithm, data = body[0], body[1:]
    limit = max(budget.left, 0) + 1
    try:
        if algorithm == 0:
            out = data
        elif algorithm in (1, 2):
            out = zlib.decompressobj(-15 if algorithm == 1 else 15).decompress(data, limit)
        elif algorithm == 3:
            out = bz2.BZ2Decompressor().decompress(data, limit)
        else:
            raise _bad(f"compression algorithm {algorithm}")
    except (zlib.error, OSError, ValueError) as exc:
        raise _bad("a compressed packet that does not inflate") from exc
    budget.spend(len(out))
    return out


def _readable(data: bytes, budget: _Budget, depth: int) -> Iterator[bytes]:
    if depth > _MAX_DEPTH:
        raise _bad("compressed packets nested too deep")
    for tag, body in packets(data):
        if tag in _ENCRYPTED:
            continue
        if tag == _COMPRESSED:
            yield from _readable(_inflate(body, budget), budget, depth + 1)
        else:
            yield body


def _dearmored(body: str, prefix: str) -> bytes:
    # The first line is what is left of the BEGIN line.
    lines = [
        (line[len(prefix) :] if line.startswith(prefix) else line).strip()
        for line in body.splitlines()[1:]
    ]
    if lines and _HEADER_LINE.match(lines[0]):
        # Armor header lines, then a blank line, then the data.
        if "" not in lines:
            raise _bad("armor headers with no data after them")
        blank = lines.index("")
        if not all(_HEADER_LINE.match(line) for line in lines[:blank]):
            raise _bad("armor headers that are not headers")
        lines = lines[blank + 1 :]
    lines = [line for line in lines if line]
    if lines and _CHECKSUM.fullmatch(lines[-1]):
        lines = lines[:-1]
    try:
        return base64.b64decode("".join(lines), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _bad("armor that is not base64") from exc


def _blocks(text: str) -> Iterator[tuple[str, str]]:
    """Each armored block's prefix and the text between its BEGIN and END lines, found in
    one pass: a BEGIN with no END (a clear-signed text's) holds no block."""
    open_blocks: dict[tuple[str, str], re.Match[str]] = {}
    for edge in _EDGE.finditer(text):
        key = (edge["prefix"], edge["kind"])
        if edge["edge"] == "BEGIN":
            open_blocks[key] = edge
        elif (begin := open_blocks.pop(key, None)) is not None:
            yield edge["prefix"], text[begin.end() : edge.start()]


class Reader:
    """Reads the OpenPGP data of one message: what it inflates is bounded for the whole
    message, and data met twice (one body read in two charsets) is read once."""

    def __init__(self) -> None:
        self._budget = _Budget()
        self._seen: set[bytes] = set()

    def _first_time(self, data: str | bytes) -> bool:
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        digest = hashlib.sha256(raw).digest()
        if digest in self._seen:
            return False
        self._seen.add(digest)
        return True

    def readable(self, data: bytes) -> list[bytes]:
        """The body of every packet of binary OpenPGP ``data`` that is not encrypted."""
        if not self._first_time(data):
            return []
        return list(_readable(data, self._budget, 0))

    def armored(self, text: str) -> list[bytes]:
        """The readable packet bodies of every armored block in ``text``."""
        if BEGIN not in text:
            return []
        found: list[bytes] = []
        for prefix, body in _blocks(text):
            if self._first_time(body):
                found.extend(_readable(_dearmored(body, prefix), self._budget, 0))
        return found


def readable(data: bytes) -> list[bytes]:
    """``Reader.readable`` for data on its own."""
    return Reader().readable(data)


def armored(text: str) -> list[bytes]:
    """``Reader.armored`` for a text on its own."""
    return Reader().armored(text)
