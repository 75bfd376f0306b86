"""The last look before a reply leaves: could a reader still find the owner's address?

Scrubbing rewrites the forms it knows; this check reads the finished message the ways
a recipient's client might show it (decoded, markup stripped, entities and URLs
unescaped, flowed lines joined, compatibility forms folded) and refuses on any hit.
"""

from __future__ import annotations

import contextlib
import html
import re
import unicodedata
from collections.abc import Iterator
from email.message import Message
from urllib.parse import unquote

from maskmail.core.errors import Unrewritable
from maskmail.mail.scrub import Scrubber

_TAG = re.compile(r"<[^<>]*>")
# RFC 2046 5.2.1 and 5.1: composite parts are never base64 or quoted-printable, and a
# reader that decodes them anyway would see what the parser did not.
_IDENTITY = frozenset({"7bit", "8bit", "binary"})
_PARAM_HEADERS = ("content-type", "content-disposition")


def _readings(text: str) -> set[str]:
    """``text`` as a reader could see it; each distinct form once, as messages are big."""
    shown = {text, _TAG.sub("", text)} if "<" in text else {text}
    found = set(shown)
    for one in shown:
        unescaped = html.unescape(one) if "&" in one else one
        found.add(unquote(unquote(unescaped)) if "%" in unescaped else unescaped)
    return found | {unicodedata.normalize("NFKC", one) for one in found if not one.isascii()}


def _param_texts(part: Message) -> Iterator[str]:
    """MIME parameters decoded; a file name shows the address even when more follows."""
    for name in _PARAM_HEADERS:
        params = getattr(part.get(name), "params", None) or {}
        yield from (str(v) for v in params.values())


def _joined_flowed(part: Message, text: str) -> str:
    """Soft line breaks of format=flowed with DelSp=yes join words without a space."""
    if str(part.get_param("format", "")).lower() != "flowed":
        return text
    if str(part.get_param("delsp", "")).lower() != "yes":
        return text
    return re.sub(r" \r?\n", "", text)


def _body_texts(part: Message) -> set[str]:
    encoding = str(part.get("content-transfer-encoding", "7bit")).strip().lower()
    if part.is_multipart():
        if encoding not in _IDENTITY:
            raise Unrewritable(f"a {part.get_content_type()} part in {encoding!r}")
        return set()
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes):
        return set()
    # Bytes as UTF-8 (an owner's non-ASCII address) and, for an attachment, byte by byte.
    texts = {data.decode("utf-8", "replace")}
    if part.get_content_maintype() != "text":
        texts.add(data.decode("latin-1"))
    with contextlib.suppress(LookupError):
        texts.add(
            _joined_flowed(part, data.decode(part.get_content_charset("us-ascii"), "replace"))
        )
    return texts


def refuse_if_visible(message: Message, scrub: Scrubber) -> None:
    """Unrewritable when the owner's address can still be read anywhere in ``message``."""
    for part in message.walk():
        around = (part.preamble or "", part.epilogue or "")
        texts = (*(str(value) for value in part.values()), *_body_texts(part), *around)
        if any(scrub.in_plain(reading) for text in texts for reading in _readings(text)) or any(
            scrub.in_plain(reading, bounded=False)
            for text in _param_texts(part)
            for reading in _readings(text)
        ):
            raise Unrewritable("the owner's address can still be read in the reply")
