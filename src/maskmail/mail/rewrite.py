"""Rewriting a forward: new sender headers, an allowlist for the rest, the body untouched.

Only the header block is parsed. The body is carried over as the bytes that arrived,
because re-serialising a parsed (multipart) message changes bytes and breaks signatures.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from email import policy
from email.errors import HeaderParseError
from email.headerregistry import Address, BaseHeader
from email.message import Message
from email.parser import Parser
from email.utils import format_datetime, formataddr

from maskmail.core.dot_atom import ATEXT, DOT_ATOM
from maskmail.core.spam import VERDICT_HEADERS

LOOP_HEADER = "X-Maskmail-Loop"
# Headers the owner's mail client needs to show, thread and unpack the message. Everything
# else (Received chains, DKIM and ARC signatures, Sender, Return-Path, tracking headers)
# is dropped: it would leak hops or no longer be true after the rewrite.
ALLOWLIST = frozenset(
    {
        "subject", "date", "message-id", "in-reply-to", "references", "to", "cc",
        "mime-version", "content-type", "content-transfer-encoding", "content-disposition",
        "content-language", "content-id", "content-description",
        "list-id", "list-unsubscribe", "list-unsubscribe-post", "list-archive", "list-help",
        "list-post", "list-subscribe", "list-owner", "precedence", "auto-submitted",
        "importance", "priority", "x-priority", "sensitivity", "thread-topic", "thread-index",
        "keywords", "comments",
    }
)  # fmt: skip
MAX_DISPLAY = 200
# From or Reply-To values longer than one line (RFC 5322 2.1.1) are not parsed (see
# _addresses); real ones are far shorter.
MAX_ADDRESS_HEADER = 1000
_UNSAFE_TOKEN = re.compile(r"[^A-Za-z0-9.\-\[\]:_]")
_BLANK_LINE = re.compile(rb"\r?\n\r?\n")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")

Fields = list[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class Origin:
    """Who wrote, as the owner should see it."""

    display_name: str
    address: str
    # Where a reply should go: Reply-To when the sender set one, else From.
    reply_to: str


def split_message(raw: bytes) -> tuple[bytes, bytes]:
    """The header block (without the blank line) and the body, byte for byte."""
    if raw.startswith((b"\r\n", b"\n")):
        return b"", raw[2:] if raw.startswith(b"\r\n") else raw[1:]
    found = _BLANK_LINE.search(raw)
    if found is None:
        return raw, b""
    # The header block keeps its own final line break.
    end_of_headers = raw.index(b"\n", found.start()) + 1
    return raw[:end_of_headers], raw[found.end() :]


class _AsStored(policy.Compat32):
    """compat32, with every value handed back as stored.

    Once done, the parser reads the Content-Type: the default policy would parse it
    through its header registry, which is costly and raises on deeply nested comments,
    and compat32 raises on a value holding both non-ASCII text and bytes that are not
    UTF-8. The forward never reads that field; the ones it does read go through
    ``structured`` (addresses through ``addresses``, which uses it for all but plain ones).
    """

    def header_fetch_parse(self, name: str, value: str) -> str:
        return value


_AS_STORED = _AsStored()


def parse_headers(header_block: bytes) -> Message:
    """The header block parsed on its own; the body is never parsed, and no value is.

    Decoded as UTF-8 first (RFC 6532 headers arrive with SMTPUTF8); bytes that are not
    UTF-8 are surrogate-escaped, so they can be written back exactly as they came.
    """
    text = header_block.decode("utf-8", "surrogateescape")
    return Parser(policy=_AS_STORED).parsestr(text, headersonly=True)


def header_fields(headers: Message) -> Fields:
    """The headers in order, values raw (still folded; 8-bit bytes surrogate-escaped)."""
    return [(name, str(value)) for name, value in headers.raw_items()]


def named(headers: Message, name: str) -> Fields:
    """The fields called ``name`` (lower case; in any case in the message), in order, raw."""
    return [(key, value) for key, value in headers.raw_items() if key.lower() == name]


def structured(fields: Fields) -> list[BaseHeader]:
    """Raw fields as ``EmailMessage.get_all`` under ``policy.default`` gives them: header
    objects from its registry (addresses parsed, encoded words decoded, line breaks
    gone). Only for the few fields read, after any check of their raw length."""
    return [policy.default.header_fetch_parse(key, value) for key, value in fields]


# One mailbox in its plain form: addr@domain, or an optional display name (atoms apart
# by blanks, or one quoted string without backslashes) before <addr@domain>; both parts
# of the address dot-atoms. Printable ASCII only: no comments, groups or line breaks.
_QTEXT = r"[\t\x20\x21\x23-\x5b\x5d-\x7e]"  # printable but the quote and the backslash
_PLAIN_MAILBOX = re.compile(
    rf"[ \t]*(?:(?P<bare_user>{DOT_ATOM})@(?P<bare_domain>{DOT_ATOM})"
    rf'|(?:(?P<phrase>{ATEXT}+(?:[ \t]+{ATEXT}+)*)|"(?P<quoted>{_QTEXT}*)")?'
    rf"[ \t]*<(?P<user>{DOT_ATOM})@(?P<domain>{DOT_ATOM})>)"
    r"[ \t]*(?P<sep>,|\Z)"
)


def _plain_addresses(value: str) -> list[Address] | None:
    """The addresses of a value made only of plain mailboxes, as the email package's
    parser gives them; None for any other value.

    That parser builds a token tree, its defects and a header class per value: for the
    From and Reply-To of every forward, the largest share of the mail plane's CPU after
    the database and the sockets (docs/benchmarks.md). The forms real mail nearly always
    has are read here with one pattern instead; anything else (encoded words included)
    still goes to the parser.
    """
    if "=?" in value:
        return None
    found: list[Address] = []
    position = 0
    while True:
        mailbox = _PLAIN_MAILBOX.match(value, position)
        if mailbox is None:
            return None
        if mailbox["bare_user"] is not None:
            found.append(Address("", mailbox["bare_user"], mailbox["bare_domain"]))
        else:
            phrase = mailbox["phrase"]
            name = " ".join(phrase.split()) if phrase is not None else mailbox["quoted"] or ""
            found.append(Address(name, mailbox["user"], mailbox["domain"]))
        if not mailbox["sep"]:
            return found
        position = mailbox.end()


def addresses(name: str, value: str) -> Sequence[Address]:
    """The addresses of one raw field as ``structured`` gives them, raising what it
    raises; plain ones without the header registry (``_plain_addresses``). Only after
    any check of the raw length."""
    plain = _plain_addresses(value)
    if plain is not None:
        return plain
    return tuple(getattr(structured([(name, value)])[0], "addresses", ()))


def _address_list(name: str, value: str) -> list[Address]:
    """The addresses of one field, or none when it is unparseable or too long to parse.

    The standard library's address parser is quadratic on some inputs (a long run of
    quotes; docs/security.md) and recursive on nested comments, and it runs on the event
    loop: an oversized value is treated as absent rather than parsed.
    """
    if len(value) > MAX_ADDRESS_HEADER:
        return []
    try:
        found = addresses(name, value)
    except (HeaderParseError, IndexError, ValueError, TypeError, AttributeError, RecursionError):
        return []
    return [address for address in found if isinstance(address, Address)]


def _addresses(headers: Message, name: str) -> list[Address]:
    """The addresses of the first ``name`` field (see ``_address_list``)."""
    first = named(headers, name)[:1]
    return _address_list(*first[0]) if first else []


def _first_address(found: list[Address]) -> str | None:
    for address in found:
        if "@" in address.addr_spec and _clean(address.addr_spec):
            return address.addr_spec
    return None


def _clean(text: str) -> bool:
    """No undecodable bytes and no line breaks: safe to store and to show."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return not any(c in text for c in "\r\n\x00")


def origin(headers: Message, envelope_sender: str) -> Origin:
    """The author from ``From`` (falling back to the envelope), and where replies go."""
    authors = _addresses(headers, "from")
    address = _first_address(authors) or envelope_sender
    name = str(authors[0].display_name) if authors else ""
    return Origin(
        display_name=name if _clean(name) else "",
        address=address,
        reply_to=_first_address(_addresses(headers, "reply-to")) or address,
    )


@dataclass(frozen=True, slots=True)
class Incoming:
    """A message as it arrived, read once: what forwarding it needs."""

    raw: bytes
    # The body, byte for byte, and the header fields in order (``header_fields``).
    body: bytes
    fields: Fields
    origin: Origin
    # It carries the loop marker we add to every forward: our own mail came back.
    looped: bool


def read(raw: bytes, envelope_sender: str, loop_marker: str) -> Incoming:
    """The message split, its header block parsed (the body never is), its author and
    whether it carries ``loop_marker``."""
    header_block, body = split_message(raw)
    headers = parse_headers(header_block)
    fields = header_fields(headers)
    return Incoming(
        raw, body, fields, origin(headers, envelope_sender), has_loop_marker(fields, loop_marker)
    )


def has_loop_marker(fields: Fields, marker: str) -> bool:
    return any(
        name.lower() == LOOP_HEADER.lower() and value.strip().lower() == marker.lower()
        for name, value in fields
    )


def sender_display(author: Origin) -> str:
    """The display name the owner sees: the original name and address."""
    shown = f"{author.display_name} ({author.address})" if author.display_name else author.address
    shown = " ".join(shown.split()) or "unknown sender"
    return shown[:MAX_DISPLAY]


def received_header(
    *, helo: str | None, peer_ip: str | None, hostname: str, relay_address: str, when: datetime
) -> str:
    """Our ``Received`` line; the client's HELO name is reduced to safe characters."""
    helo_name = _UNSAFE_TOKEN.sub("", helo or "unknown")[:64] or "unknown"
    peer = _UNSAFE_TOKEN.sub("", peer_ip or "unknown")
    return (
        f"Received: from {helo_name} ([{peer}])\r\n\tby {hostname} (maskmail) with ESMTP"
        f"\r\n\tfor <{relay_address}>; {format_datetime(when)}\r\n"
    )


@dataclass(frozen=True, slots=True)
class Forward:
    """Everything the rewrite needs besides the message."""

    relay_address: str
    reverse_alias: str | None
    # What our Received line says: the client's HELO name and address, our host name,
    # and when.
    helo: str | None
    peer_ip: str | None
    hostname: str
    when: datetime
    loop_marker: str
    spam: bool
    # The connecting host is a trusted relay, so its filter's verdict headers stay.
    keep_verdicts: bool


def _says_yes(value: str) -> bool:
    return value.strip().upper().startswith("YES")


def _line(name: str, value: str) -> bytes:
    """One header field, folded with CRLF only.

    Any other line break (a bare CR or LF) becomes a fold, an empty continuation is
    dropped and a NUL becomes a space: nothing in a value can end the header block or
    start a header of its own at a downstream parser.
    """
    first, *rest = _LINE_BREAK.split(value.replace("\x00", " "))
    folds = [line if line[0] in " \t" else f" {line}" for line in rest if line.strip()]
    return "\r\n".join([f"{name}: {first}", *folds, ""]).encode("utf-8", "surrogateescape")


def rewrite(message: Incoming, forward: Forward) -> bytes:
    """The forwarded message: our headers, the allowed original ones, the original body."""
    kept = [
        (name, value)
        for name, value in message.fields
        if name.lower() in ALLOWLIST or (forward.keep_verdicts and name.lower() in VERDICT_HEADERS)
    ]
    received = received_header(
        helo=forward.helo,
        peer_ip=forward.peer_ip,
        hostname=forward.hostname,
        relay_address=forward.relay_address,
        when=forward.when,
    )
    out = [
        received.encode("ascii"),
        _line("From", formataddr((sender_display(message.origin), forward.relay_address), "utf-8")),
        _line(LOOP_HEADER, forward.loop_marker),
    ]
    if forward.reverse_alias is not None:
        out.insert(2, _line("Reply-To", forward.reverse_alias))
    if forward.spam:
        # The owner's filters look at X-Spam-Flag: make it say what we concluded.
        kept = [(n, v) for n, v in kept if n.lower() != "x-spam-flag" or _says_yes(v)]
        if not any(n.lower() == "x-spam-flag" for n, _ in kept):
            out.append(_line("X-Spam-Flag", "YES"))
    out.extend(_line(name, value) for name, value in kept)
    return b"".join(out) + b"\r\n" + message.body
