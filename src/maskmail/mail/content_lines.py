"""Calendars and cards (iCalendar, vCard) read the way a calendar or address book reads
them, for the owner's address in what their text does not show plainly.

Their content lines fold (RFC 5545 3.1, RFC 6350 3.2), which the scrubber's fold
handling already reads through. What it cannot: a value in quoted-printable (vCard
2.1, whose soft line breaks split an address too), and one in base64 (``ENCODING=b``,
or a ``data:`` URI), such as a photo or a key whose OpenPGP user id names the owner.
Each is decoded here, so the final check reads it; the reply is then refused, as the
relay does not write such values back.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import quopri
import re
from collections.abc import Iterator

from maskmail.core.errors import Unrewritable
from maskmail.mail import pgp_packets
from maskmail.mail.scrub import FOLD

# Also quoted ("> ") in a reply's text.
_BEGIN = re.compile(r"^[ \t>]*BEGIN:V(?:CARD|CALENDAR)\b", re.IGNORECASE | re.MULTILINE)
# name;params:value, where a quoted parameter value may hold ``:`` or ``;``.
_LINE = re.compile(
    r'(?P<name>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)?)(?P<params>(?:;(?:[^:;"]|"[^"]*")*)*):'
    r"(?P<value>.*)"
)
_DATA_URI = re.compile(r"data:(?P<type>[^,;]*)[^,]*;base64,(?P<data>.*)", re.IGNORECASE)


def is_directory(text: str) -> bool:
    """Whether ``text`` holds a calendar or a card, whatever its part's type says."""
    # The plain search first: much faster than the pattern over a large body.
    return "begin:v" in text.lower() and _BEGIN.search(text) is not None


def _blob(data: str) -> bytes | None:
    try:
        return base64.b64decode(re.sub(r"\s+", "", data), validate=True)
    except (binascii.Error, ValueError):
        return None  # shown as written, and read so by the check


def _key(blob: bytes, reader: pgp_packets.Reader) -> list[bytes]:
    """A key's readable packets, armored or binary."""
    if pgp_packets.BEGIN.encode() in blob:
        return reader.armored(blob.decode("latin-1"))
    return reader.readable(blob)


def _decoded(name: str, params: str, value: str, reader: pgp_packets.Reader) -> Iterator[bytes]:
    upper = params.upper()
    if "QUOTED-PRINTABLE" in upper:
        yield quopri.decodestring(value.encode("utf-8", "surrogateescape"))
    uri = _DATA_URI.match(value.strip())
    if uri is not None:
        blob = _blob(uri["data"])
        upper += ";" + uri["type"].upper()
    elif re.search(r";(?:ENCODING=)?(?:B|BASE64)(?=[;:]|$)", upper):
        blob = _blob(value)
    else:
        return
    if blob is None:
        return
    yield blob
    if "PGP" in upper:
        # A key's user ids are in its packets: one that does not read is refused.
        yield from _key(blob, reader)
    elif name.upper() == "KEY":
        # A key of no declared type may be OpenPGP, or X.509 (whose names the bytes show).
        with contextlib.suppress(Unrewritable):
            yield from _key(blob, reader)


def _logical_lines(text: str) -> Iterator[str]:
    """Content lines unfolded; a quoted-printable value joined across its soft breaks."""
    lines = iter(FOLD.sub("", text).splitlines())
    for line in lines:
        while "QUOTED-PRINTABLE" in line.partition(":")[0].upper() and line.endswith("="):
            following = next(lines, None)
            if following is None:
                break
            line = line[:-1] + following
        yield line


def hidden(text: str, reader: pgp_packets.Reader) -> list[str]:
    """What a calendar or card in ``text`` holds beneath its written form: values in
    quoted-printable or base64, decoded, each as UTF-8 and byte by byte."""
    if not is_directory(text):
        return []
    found: list[str] = []
    for line in _logical_lines(text):
        parsed = _LINE.match(line.lstrip(" \t>").rstrip())
        if parsed is None:
            continue
        for data in _decoded(parsed["name"], parsed["params"], parsed["value"], reader):
            found += [data.decode("utf-8", "replace"), data.decode("latin-1")]
    return found
