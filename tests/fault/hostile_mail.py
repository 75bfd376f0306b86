"""The hostile corpus: fixture files in corpus/, plus the big ones, generated here.

Megabytes of generated junk are not worth committing; each generator says what it
attacks.
"""

from __future__ import annotations

import base64
import functools
import io
import zipfile
from collections.abc import Callable
from pathlib import Path

CORPUS = Path(__file__).with_name("corpus")
HEAD = (
    b"From: Mallory <mallory@example.net>\r\nTo: mask@relay.test\r\n"
    b"Date: Sun, 22 Nov 2026 06:00:00 +0000\r\nMessage-ID: <big@example.net>\r\n"
)
LONG = 100_000


def _fold(value: bytes, width: int = 900) -> bytes:
    """A value cut into continuation lines, each short enough for SMTP."""
    return b"\r\n ".join(value[i : i + width] for i in range(0, len(value), width))


def long_header_line() -> bytes:
    return HEAD + b"Subject: " + b"A" * LONG + b"\r\n\r\nbody\r\n"


def long_body_line() -> bytes:
    return HEAD + b"Subject: one long body line\r\n\r\n" + b"B" * LONG + b"\r\n"


def long_folded_subject() -> bytes:
    return HEAD + b"Subject: " + _fold(b"word " * (LONG // 5)) + b"\r\n\r\nbody\r\n"


def long_folded_from_quotes() -> bytes:
    """The address parser is quadratic on runs of quotes: 38 s of a blocked loop once."""
    return b"From: " + _fold(b'"' * LONG) + b"\r\nSubject: quotes\r\n\r\nbody\r\n"


def long_folded_reply_to_atoms() -> bytes:
    return HEAD + b"Reply-To: " + _fold(b"a " * (LONG // 2)) + b"\r\nSubject: atoms\r\n\r\nx\r\n"


def nested_comments_in_from() -> bytes:
    """Nested comments recurse once per level in the address parser."""
    value = b"(" * 5000 + b")" * 5000 + b" m@example.net"
    return b"From: " + _fold(value) + b"\r\nSubject: nested comments\r\n\r\nbody\r\n"


def short_nested_comments_in_reply_to() -> bytes:
    """Under the length cap, still deep enough to exhaust the recursion limit."""
    value = b"(" * 490 + b")" * 490 + b" r@example.net"
    return HEAD + b"Reply-To: " + _fold(value, 100) + b"\r\nSubject: nest\r\n\r\nx\r\n"


def many_headers() -> bytes:
    lines = b"".join(b"X-H%d: v\r\n" % i for i in range(50_000))
    return HEAD + b"Subject: fifty thousand headers\r\n" + lines + b"\r\nbody\r\n"


def many_reply_to_headers() -> bytes:
    lines = b"".join(b"Reply-To: r%d@example.net\r\n" % i for i in range(20_000))
    return HEAD + b"Subject: many Reply-To\r\n" + lines + b"\r\nbody\r\n"


def headers_without_end() -> bytes:
    """A megabyte of header lines and no blank line: the whole message is headers."""
    return HEAD + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"p" * 60) for i in range(15_000))


def deep_multipart(levels: int = 500) -> bytes:
    opening = b"".join(
        b"--b%d\r\nContent-Type: multipart/mixed; boundary=b%d\r\n\r\n" % (i, i + 1)
        for i in range(levels)
    )
    closing = b"".join(b"--b%d--\r\n" % i for i in reversed(range(levels)))
    innermost = b"--b%d\r\nContent-Type: text/plain\r\n\r\ndeep\r\n" % levels
    return (
        HEAD
        + b"Subject: 500 levels\r\nMIME-Version: 1.0\r\n"
        + b"Content-Type: multipart/mixed; boundary=b0\r\n\r\n"
        + opening
        + innermost
        + closing
    )


def deep_unterminated_multipart(levels: int = 500) -> bytes:
    parts = b"".join(
        b"--n%d\r\nContent-Type: multipart/mixed; boundary=n%d\r\n\r\n" % (i, i + 1)
        for i in range(levels)
    )
    return (
        HEAD
        + b"Subject: never closed\r\nContent-Type: multipart/mixed; boundary=n0\r\n\r\n"
        + parts
    )


@functools.cache
def zip_of_death() -> bytes:
    """A zip bomb as a base64 attachment: 512 MiB of zeros in about 500 KiB."""
    buffer = io.BytesIO()
    chunk = bytes(1 << 20)
    archive = zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=6)
    with archive, archive.open("invoice.pdf", "w", force_zip64=True) as entry:
        for _ in range(512):
            entry.write(chunk)
    encoded = base64.encodebytes(buffer.getvalue()).replace(b"\n", b"\r\n")
    return (
        HEAD
        + b"Subject: your invoice\r\nMIME-Version: 1.0\r\n"
        + b"Content-Type: multipart/mixed; boundary=zz\r\n\r\n--zz\r\n"
        + b"Content-Type: text/plain\r\n\r\nSee attached.\r\n--zz\r\n"
        + b'Content-Type: application/zip; name="invoice.zip"\r\n'
        + b"Content-Transfer-Encoding: base64\r\n"
        + b'Content-Disposition: attachment; filename="invoice.zip"\r\n\r\n'
        + encoded
        + b"--zz--\r\n"
    )


def huge_invalid_base64() -> bytes:
    line = b"!@#$%^&*()_+{}|:<>?~" * 3 + b"\r\n"
    return (
        HEAD
        + b"Subject: a megabyte of broken base64\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        + line * 16_000
    )


def many_encoded_words() -> bytes:
    words = b" ".join(
        b"=?utf-8?b?" + base64.b64encode(b"\xff\xfe" * 20) + b"?=" for _ in range(2000)
    )
    return HEAD + b"Subject: " + _fold(words) + b"\r\n\r\nbody\r\n"


GENERATED: dict[str, Callable[[], bytes]] = {
    "gen-long-header-line": long_header_line,
    "gen-long-body-line": long_body_line,
    "gen-long-folded-subject": long_folded_subject,
    "gen-long-folded-from-quotes": long_folded_from_quotes,
    "gen-long-folded-reply-to-atoms": long_folded_reply_to_atoms,
    "gen-nested-comments-in-from": nested_comments_in_from,
    "gen-short-nested-comments-in-reply-to": short_nested_comments_in_reply_to,
    "gen-many-headers": many_headers,
    "gen-many-reply-to-headers": many_reply_to_headers,
    "gen-headers-without-end": headers_without_end,
    "gen-deep-multipart": deep_multipart,
    "gen-deep-unterminated-multipart": deep_unterminated_multipart,
    "gen-zip-of-death": zip_of_death,
    "gen-huge-invalid-base64": huge_invalid_base64,
    "gen-many-encoded-words": many_encoded_words,
}


def fixture_files() -> dict[str, bytes]:
    """The committed messages by name, without the number that orders the files."""
    return {path.stem.split("-", 1)[1]: path.read_bytes() for path in sorted(CORPUS.glob("*.eml"))}


def corpus() -> dict[str, bytes]:
    """Every hostile message by name: the fixture files, then the generated ones."""
    return {**fixture_files(), **{name: make() for name, make in GENERATED.items()}}
