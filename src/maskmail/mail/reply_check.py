"""The last look before a reply leaves: could a reader still find the owner's address?

Scrubbing rewrites the forms it knows; this check reads the finished message the ways
a recipient's client might show it and refuses on any hit. Every header field is read,
each occurrence, in every MIME part, raw and decoded (encoded words joined even where
they split the address); every body decoded, and beneath it the OpenPGP packets under
an armor and a calendar's or card's encoded values. Each text is then read as shown:
folds joined, markup and comments stripped, entities and URLs unescaped, flowed lines
joined, compatibility forms folded (a full-width at sign), invisible characters
(zero-width, soft hyphen) dropped, quotes around a local part and white space around
the at sign taken out. The address counts with any sub-address tag; in ids, MIME
parameters and ``cid:`` links, inside longer tokens too.
"""

from __future__ import annotations

import contextlib
import html
import re
import unicodedata
from collections.abc import Iterator
from email import policy
from email.errors import HeaderParseError
from email.header import decode_header
from email.message import Message
from email.parser import BytesParser
from urllib.parse import unquote

from maskmail.core.errors import Unrewritable
from maskmail.mail import content_lines, pgp_packets
from maskmail.mail.reply_headers import ID_HEADERS, PARAM_HEADERS, may_hold_address
from maskmail.mail.scrub import FOLD, Scrubber

_MARKUP = re.compile(r"<!--.*?(?:-->|$)|<[^<>]*>", re.DOTALL)
# Unicode's default-ignorable code points: a reader's screen shows nothing for them.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
# What an address may carry that a reader looks through: quotes and escapes around a
# local part, and comments (RFC 5322 CFWS).
_QUOTING = re.compile(r'["\\]|\([^()]*\)')
# A line break or tab escaped in a calendar's, a card's or JSON's text: white space to
# its reader, where a quoted pair's backslash (``al\ice``) is nothing.
_ESCAPED_SPACE = re.compile(r"\\[nrtbf]", re.IGNORECASE)
_CID = re.compile(r"cid:([^\s\"'<>()]+)", re.IGNORECASE)
# Found by plain search first: much faster than the pattern over a large body.
_CID_SCHEMES = ("id:", "ID:", "Id:", "iD:")
# RFC 2046 5.2.1 and 5.1: composite parts are never base64 or quoted-printable, and a
# reader that decodes them anyway would see what the parser did not.
_IDENTITY = frozenset({"7bit", "8bit", "binary"})


def _unseen(text: str) -> str:
    """``text`` with compatibility forms folded and invisible characters dropped."""
    if text.isascii():
        return text
    shown = unicodedata.normalize("NFKC", _INVISIBLE.sub("", text))
    # A compatibility form may fold into an invisible one (U+FFA0 into U+1160).
    return _INVISIBLE.sub("", shown) if _INVISIBLE.search(shown) else shown


def _unfolded(text: str) -> str:
    """White space around each at sign taken out, where a fold (or a hand) split it."""
    if "@" not in text:
        return text
    pieces = text.split("@")
    last = len(pieces) - 1
    return "@".join(
        piece.rstrip() if i == 0 else piece.lstrip() if i == last else piece.strip()
        for i, piece in enumerate(pieces)
    )


def _readings(text: str) -> set[str]:
    """``text`` as a reader could see it; each distinct form once, as messages are big."""
    # Folds joined first: a calendar's, a card's or a header's reader does so.
    text = FOLD.sub("", text) if "\n" in text else text
    shown = {text, _MARKUP.sub("", text)} if "<" in text else {text}
    found = set(shown)
    for one in shown:
        unescaped = html.unescape(one) if "&" in one else one
        found.add(unescaped)
        if "%" in unescaped:
            found.add(unquote(unquote(unescaped)))
    found |= {_unseen(one) for one in found}
    found |= {_ESCAPED_SPACE.sub(" ", one) for one in found if "\\" in one}
    # Quotes and comments, then folds, taken out: each step may be the one that leaves
    # the address standing on its own.
    found |= {_QUOTING.sub("", one) for one in found if _QUOTING.search(one)}
    return found | {_unfolded(one) for one in found}


def _decoded_words(raw: str) -> str:
    """A raw field with its encoded words decoded wherever they sit, as lenient
    readers do; adjacent words are joined, so a split address is whole again."""
    try:
        pieces = decode_header(raw)
    except (HeaderParseError, ValueError):
        return raw
    out = []
    for piece, charset in pieces:
        if isinstance(piece, str):
            out.append(piece)
            continue
        try:
            out.append(piece.decode(charset or "latin-1", "replace"))
        except LookupError:
            out.append(piece.decode("latin-1"))
    return "".join(out)


def _as_utf8(text: str) -> str:
    """Text as the parser stored it, 8-bit bytes surrogate-escaped, decoded as UTF-8 the
    way a reader would (RFC 6532 headers, an 8-bit body)."""
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _header_texts(part: Message) -> Iterator[tuple[str, bool]]:
    """Every field of ``part``, each occurrence, as written and as decoded; with whether
    it is a token where the address counts even inside a longer one (an id, a file
    name)."""
    for name, raw in part.raw_items():
        raw_text = str(raw)
        if not may_hold_address(raw_text):
            continue
        key = name.lower()
        inside = key in ID_HEADERS
        header = part.policy.header_fetch_parse(name, raw)
        raw_text = _as_utf8(raw_text)
        yield raw_text, inside
        yield _decoded_words(re.sub(r"\r?\n", "", raw_text)), inside
        yield str(header), inside
        if key in PARAM_HEADERS:
            params = getattr(header, "params", None) or {}
            yield from ((str(value), True) for value in params.values())


def _joined_flowed(part: Message, text: str) -> str:
    """Soft line breaks of format=flowed with DelSp=yes join words without a space."""
    if str(part.get_param("format", "")).lower() != "flowed":
        return text
    if str(part.get_param("delsp", "")).lower() != "yes":
        return text
    return re.sub(r" \r?\n", "", text)


def _written_body(part: Message) -> str:
    """A body's bytes as they are written, read as UTF-8: ``get_payload`` reads 8-bit
    bytes in the part's charset (ASCII when none), each one a replacement character."""
    data = part.as_bytes(policy=policy.default.clone(linesep="\r\n"))
    return data.partition(b"\r\n\r\n")[2].decode("utf-8", "replace")


def _body_texts(part: Message, reader: pgp_packets.Reader) -> set[str]:
    encoding = str(part.get("content-transfer-encoding", "7bit")).strip().lower()
    if part.is_multipart():
        if encoding not in _IDENTITY:
            raise Unrewritable(f"a {part.get_content_type()} part in {encoding!r}")
        return set()
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes):
        return set()
    # Base64 that does not decode may be shown as it is written. (Quoted-printable
    # decoding keeps every character but its escapes, so its decoded text is enough.)
    written = part.get_payload() if encoding == "base64" else None
    # Bytes as UTF-8 (an owner's non-ASCII address) and, for an attachment, byte by byte.
    texts = {data.decode("utf-8", "replace")}
    if isinstance(written, str):
        texts.add(_written_body(part) if "\ufffd" in written else written)
    if part.get_content_maintype() != "text":
        texts.add(data.decode("latin-1"))
    with contextlib.suppress(LookupError):
        texts.add(
            _joined_flowed(part, data.decode(part.get_content_charset("us-ascii"), "replace"))
        )
    if (
        part.get_content_type() in pgp_packets.OPENPGP_TYPES
        and pgp_packets.BEGIN.encode() not in data
    ):
        texts |= _as_texts(reader.readable(data))
    return texts | _beneath(texts, reader)


def _as_texts(blobs: list[bytes]) -> set[str]:
    return {
        text for blob in blobs for text in (blob.decode("utf-8", "replace"), blob.decode("latin-1"))
    }


def _beneath(texts: set[str] | list[str], reader: pgp_packets.Reader) -> set[str]:
    """What the texts hold that no search of them finds: OpenPGP packets under their
    armor, and a calendar's or card's encoded values."""
    found: set[str] = set()
    for text in texts:
        found |= _as_texts(reader.armored(text))
        found.update(content_lines.hidden(text, reader))
    return found


def _visible(scrub: Scrubber, text: str, *, inside: bool) -> bool:
    if not may_hold_address(text):
        return False
    readings = _readings(text)
    if any(scrub.in_plain(reading, bounded=not inside) for reading in readings):
        return True
    if inside:
        return False
    # A link to a part names its Content-ID: an id, read as one.
    links = [
        link
        for one in readings
        if any(scheme in one for scheme in _CID_SCHEMES)
        for link in _CID.findall(one)
    ]
    return any(scrub.in_plain(one, bounded=False) for link in links for one in _readings(link))


def refuse_if_visible(out: bytes, scrub: Scrubber) -> None:
    """Unrewritable when the owner's address can still be read anywhere in ``out``."""
    reader = pgp_packets.Reader()
    for part in BytesParser(policy=policy.default).parsebytes(out).walk():
        around = [text for text in (part.preamble, part.epilogue) if text]
        texts = [
            *_header_texts(part),
            *((text, False) for text in _body_texts(part, reader)),
            *((text, False) for text in (*around, *_beneath(around, reader))),
        ]
        if any(_visible(scrub, text, inside=inside) for text, inside in texts):
            raise Unrewritable("the owner's address can still be read in the reply")
