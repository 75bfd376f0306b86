"""A test's own reading of a sent reply: could anyone see the owner's mailbox in it?

Written apart from ``mail/reply_check.py`` on purpose: each view of the message (every
header field occurrence raw and decoded, every parameter, every body, the packets under
an OpenPGP armor) is read through every disguise the issues name, one after the other,
folds joined first; the mailbox counts with any sub-address tag.
"""

from __future__ import annotations

import base64
import binascii
import html
import quopri
import re
import unicodedata
from email import message_from_bytes, policy
from email.header import decode_header
from urllib.parse import unquote

_IDS = {"message-id", "in-reply-to", "references", "content-id"}
_HIDDEN = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
_ARMOR = re.compile(r"-----BEGIN PGP ([A-Z ]+)-----(.*?)-----END PGP \1-----", re.DOTALL)


def _card_values(text: str) -> list[str]:
    """A calendar's or card's base64 and quoted-printable values, decoded byte by byte."""
    found = []
    lines = re.sub(r"\r?\n[ \t]|=\r?\n", "", text).splitlines()
    for line in lines:
        name, _, value = line.partition(":")
        encoded = re.search(r"base64,(.*)", line)
        try:
            if encoded or re.search(r"ENCODING=(b|base64)\b", name, re.IGNORECASE):
                data = encoded[1] if encoded else value
                found.append(base64.b64decode(data.strip() + "==").decode("latin-1"))
        except (binascii.Error, ValueError):
            pass
        if "QUOTED-PRINTABLE" in name.upper():
            found.append(quopri.decodestring(value.encode("utf-8", "replace")).decode("latin-1"))
    return found


def _dearmored(text: str) -> list[str]:
    """Each armored block's data, decoded byte by byte (its headers end at a blank line)."""
    found = []
    for _, body in _ARMOR.findall(text):
        lines = [line.lstrip("> ").strip() for line in body.splitlines()]
        if "" in lines[1:]:
            lines = lines[lines.index("", 1) :]
        data = "".join(line for line in lines if line and not line.startswith("="))
        try:
            found.append(base64.b64decode(data + "==").decode("latin-1"))
        except (binascii.Error, ValueError):
            continue
    return found


def _decoded(raw: str) -> str:
    try:
        return "".join(
            piece if isinstance(piece, str) else piece.decode(charset or "latin-1", "replace")
            for piece, charset in decode_header(raw.replace("\r\n", "").replace("\n", ""))
        )
    except (ValueError, LookupError):
        return raw


def _views(out: bytes) -> list[tuple[str, bool]]:
    """(text, whether the address counts inside a longer token)."""
    views = [(out.decode("utf-8", "replace"), False)]
    for part in message_from_bytes(out, policy=policy.default).walk():
        for (name, raw), (_, value) in zip(part.raw_items(), part.items(), strict=True):
            inside = name.lower() in _IDS
            views += [(str(raw), inside), (_decoded(str(raw)), inside), (str(value), inside)]
        for header in ("content-type", "content-disposition"):
            for value in part.get_all(header) or []:
                views += [(str(v), True) for v in (getattr(value, "params", None) or {}).values()]
        data = part.get_payload(decode=True)
        if isinstance(data, bytes):
            views.append((data.decode(part.get_content_charset() or "latin-1", "replace"), False))
            views.append((data.decode("latin-1"), False))
        if part.is_multipart() and part.get("content-transfer-encoding") == "base64":
            body = part.as_bytes().partition(b"\n\n")[2]
            raw_body = base64.b64decode(b"".join(body.split()[:-1]) + b"==")
            views.append((raw_body.decode("latin-1"), False))
        views += [(text, False) for text in (part.preamble, part.epilogue) if text]
    beneath = [
        data for text, _ in views if "-----" in text or "BEGIN:V" in text.upper()
        for data in (*_dearmored(text), *_card_values(text))
    ]  # fmt: skip
    return views + [(data, False) for data in beneath]


def _disguises(text: str) -> list[str]:
    text = re.sub(r"\r?\n[ \t]+", "", text)
    stripped = re.sub(r"<!--.*?-->|<[^<>]*>", "", text, flags=re.DOTALL)
    unescaped = html.unescape(stripped)
    unquoted = unquote(unquote(unescaped))
    plain = _HIDDEN.sub("", unicodedata.normalize("NFKC", unquoted))
    bare = re.sub(r'["\\]', "", plain)
    joined = re.sub(r"\s*@\s*", "@", bare)
    return [text, stripped, unescaped, unquoted, plain, bare, joined]


def visible(out: bytes, owner: str) -> bool:
    """The owner's mailbox, in any case and with any tag, anywhere a reader could see it:
    as an address of its own in text, or anywhere inside an id or a parameter."""
    local, _, domain = owner.lower().rpartition("@")
    found = rf"{re.escape(local.partition('+')[0])}(?:\+[^\s@]*)?@{re.escape(domain)}"
    anywhere = re.compile(found)
    bounded = re.compile(rf"(?<![\w.+-]){found}(?![\w-]|\.[\w-])")
    for text, inside in _views(out):
        for seen in _disguises(text):
            if (anywhere if inside else bounded).search(seen.lower()):
                return True
    return False
