"""A forward wrapped in PGP/MIME (RFC 3156): what goes inside, and the envelope around it.

The inner entity is the original message's MIME entity: every ``Content-*`` field of the
forward, in order and as received, then the blank line and the body exactly as it
arrived (attachments and all). With the subject encrypted, a ``Subject`` field comes
first and the Content-Type carries ``protected-headers="v1"``; the outer subject is
``...``. The outer message keeps the forward's other fields. Line breaks are CRLF.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable

from maskmail.core.pgp import HIDDEN_SUBJECT
from maskmail.mail.rewrite import Fields, header_fields, parse_headers, split_message
from maskmail.mail.rewrite import _line as line

_INLINE_BEGIN = b"-----BEGIN PGP MESSAGE-----"
_INLINE_END = b"-----END PGP MESSAGE-----"
_PROTOCOL = re.compile(r"""protocol\s*=\s*"?application/pgp-encrypted"?""", re.IGNORECASE)
_DEFAULT_TYPE = "text/plain; charset=us-ascii"


def already_encrypted(fields: Fields, body: bytes) -> bool:
    """PGP/MIME (multipart/encrypted for OpenPGP), or a single part whose whole body is
    one inline PGP message: forwarded as it is, never encrypted twice."""
    content_type = next((v for n, v in fields if n.lower() == "content-type"), "")
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == "multipart/encrypted":
        return bool(_PROTOCOL.search(content_type))
    if kind.startswith("multipart/"):
        return False
    text = body.strip()
    return text.startswith(_INLINE_BEGIN) and text.endswith(_INLINE_END)


def inner_entity(fields: Fields, body: bytes, *, protect_subject: bool) -> bytes:
    """What is encrypted (the module's docstring says exactly what)."""
    content = [(n, v) for n, v in fields if n.lower().startswith("content-")]
    if protect_subject:
        if not any(n.lower() == "content-type" for n, _ in content):
            content.insert(0, ("Content-Type", _DEFAULT_TYPE))
        content = [
            (n, f'{v.rstrip()}; protected-headers="v1"' if n.lower() == "content-type" else v)
            for n, v in content
        ]
        subject = [(n, v) for n, v in fields if n.lower() == "subject"]
        content = subject + content
    return b"".join(line(n, v) for n, v in content) + b"\r\n" + body


def encrypt_forward(
    message: bytes, encrypt: Callable[[bytes], bytes], *, protect_subject: bool
) -> bytes:
    """The forward as PGP/MIME; ``encrypt`` turns the inner entity into an armored
    OpenPGP message (and raises when it cannot)."""
    header_block, body = split_message(message)
    fields = header_fields(parse_headers(header_block))
    armored = encrypt(inner_entity(fields, body, protect_subject=protect_subject))
    outer = [
        (n, v)
        for n, v in fields
        if not n.lower().startswith("content-")
        and n.lower() != "mime-version"
        and not (protect_subject and n.lower() == "subject")
    ]
    if protect_subject:
        outer.append(("Subject", HIDDEN_SUBJECT))
    boundary = f"maskmail-pgp-{secrets.token_hex(12)}"
    outer += [
        ("MIME-Version", "1.0"),
        (
            "Content-Type",
            f'multipart/encrypted; protocol="application/pgp-encrypted"; boundary="{boundary}"',
        ),
        ("Content-Transfer-Encoding", "7bit"),
    ]
    armor = b"\r\n".join(armored.replace(b"\r\n", b"\n").rstrip(b"\n").split(b"\n"))
    parts = (
        f"--{boundary}\r\n"
        "Content-Type: application/pgp-encrypted\r\n"
        "Content-Description: PGP/MIME version identification\r\n"
        "\r\n"
        "Version: 1\r\n"
        "\r\n"
        f"--{boundary}\r\n"
        'Content-Type: application/octet-stream; name="encrypted.asc"\r\n'
        "Content-Description: OpenPGP encrypted message\r\n"
        'Content-Disposition: inline; filename="encrypted.asc"\r\n'
        "\r\n"
    ).encode("ascii")
    closing = f"\r\n--{boundary}--\r\n".encode("ascii")
    return b"".join(line(n, v) for n, v in outer) + b"\r\n" + parts + armor + closing
