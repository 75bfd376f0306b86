"""Rewriting a reply: the owner's address taken out of every header and text part.

Unlike a forward, a reply's body must change (the owner's address sits in quoted text,
signatures and ``mailto:`` links), so the whole message is parsed and written again.
What cannot be rewritten with certainty is refused, never sent half-scrubbed.
"""

from __future__ import annotations

import base64
import functools
import quopri
import secrets
from dataclasses import dataclass
from datetime import datetime
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.utils import format_datetime, formataddr

from maskmail.core.errors import Unrewritable
from maskmail.mail.reply_check import refuse_if_visible
from maskmail.mail.reply_headers import CidLinks, HeaderScrub, set_fields
from maskmail.mail.scrub import Scrubber

__all__ = ["KEPT", "Reply", "Scrubber", "rewrite_reply"]

# Headers the recipient needs to read, thread and unpack the reply. Everything else
# (Received, DKIM signatures, User-Agent, X-Originating-IP, Cc, Reply-To...) could
# identify the owner, so it is dropped.
KEPT = frozenset(
    {
        "subject", "date", "message-id", "in-reply-to", "references",
        "mime-version", "content-type", "content-transfer-encoding", "content-disposition",
        "content-language", "content-id", "content-description",
        "importance", "priority", "x-priority", "sensitivity", "thread-topic", "thread-index",
        "keywords", "comments", "auto-submitted",
    }
)  # fmt: skip
# Transfer encodings a part can be written back in; anything else is left alone, and
# refused if the owner's address is inside.
_WRITABLE = frozenset({"7bit", "8bit", "binary", "quoted-printable", "base64"})
_POLICY = policy.default.clone(linesep="\r\n")
_PRINTABLE = bytes(range(32, 127))


@dataclass(frozen=True, slots=True)
class Reply:
    """Everything the rewrite needs besides the message."""

    # The mailbox the reply came from.
    owner_mailbox: str
    relay_address: str
    outside: str
    # The owner's display name, when they chose to show it.
    display_name: str
    domain: str
    when: datetime
    # The owner's other mailboxes: taken out too, wherever the reply quotes them.
    scrubbed: tuple[str, ...] = ()


def _set_payload(part: Message, data: bytes) -> None:
    """Put decoded bytes back in the part's own transfer encoding."""
    encoding = str(part.get("content-transfer-encoding", "7bit")).strip().lower()
    if encoding == "base64":
        part.set_payload(base64.encodebytes(data).decode("ascii"))
    elif encoding == "quoted-printable":
        part.set_payload(quopri.encodestring(data).decode("ascii"))
    else:
        part.set_payload(data.decode("ascii", "surrogateescape"))


# Bounded: the charset names come from the messages.
@functools.lru_cache(maxsize=32)
def _ascii_compatible(charset: str) -> bool:
    """Whether ASCII text is the same bytes in ``charset`` (not so in UTF-7, UTF-16,
    EBCDIC). A charset Python does not know is read as ASCII, as most readers would."""
    try:
        return _PRINTABLE.decode(charset) == _PRINTABLE.decode("ascii")
    except LookupError:
        return True
    except UnicodeError:
        return False


def _scrub_text(data: bytes, charset: str, scrub: Scrubber, links: CidLinks) -> bytes:
    if scrub.ascii and _ascii_compatible(charset):
        return links.data(scrub.data(data))
    # Undeclared 8-bit bytes ride along in an ASCII-compatible charset; elsewhere a
    # byte that does not decode means the part cannot be read with certainty.
    errors = "surrogateescape" if _ascii_compatible(charset) else "strict"
    try:
        return links.text(scrub.text(data.decode(charset, errors))).encode(charset, errors)
    except (UnicodeError, LookupError) as exc:
        raise Unrewritable("a text part could not be decoded") from exc


def _scrub_payload(part: Message, scrub: Scrubber, links: CidLinks) -> None:
    if part.is_multipart():
        return
    encoding = str(part.get("content-transfer-encoding", "7bit")).strip().lower()
    if part.get_content_maintype() != "text" and encoding == "base64":
        return  # a binary attachment; the final check refuses it if the address shows
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes):
        return
    charset = str(part.get_content_charset() or "us-ascii").lower()
    changed = _scrub_text(data, charset, scrub, links)
    if changed == data:
        return
    if encoding not in _WRITABLE:
        raise Unrewritable(f"a part in the {encoding!r} transfer encoding holds the address")
    _set_payload(part, changed)


def rewrite_reply(raw: bytes, reply: Reply) -> bytes:
    """The reply as the outside recipient gets it: from the relay address, to them."""
    scrub = Scrubber((reply.owner_mailbox, *reply.scrubbed), reply.relay_address)
    try:
        message = BytesParser(policy=policy.default).parsebytes(raw)
        assert isinstance(message, EmailMessage)
        set_fields(message, [f for f in message.raw_items() if f[0].lower() in KEPT])
        headers = HeaderScrub(scrub, reply.owner_mailbox, reply.domain)
        parts = list(message.walk())
        # Every part's fields first: the Content-IDs they replace are linked from bodies
        # that may come before them.
        for part in parts:
            headers.rewrite(part, top=part is message)
        links = CidLinks(headers.content_ids)
        for part in parts:
            _scrub_payload(part, scrub, links)
            # The text around a multipart's parts, which some clients fill.
            for side in ("preamble", "epilogue"):
                text = getattr(part, side)
                if isinstance(text, str):
                    setattr(part, side, scrub.text(text))
        shown = scrub.text(reply.display_name)
        message["From"] = formataddr((shown, reply.relay_address), "utf-8")
        message["To"] = reply.outside
        if "message-id" not in message:
            message["Message-ID"] = f"<{secrets.token_hex(16)}@{reply.domain}>"
        if "date" not in message:
            message["Date"] = format_datetime(reply.when)
        out = message.as_bytes(policy=_POLICY)
        # Byte by byte too: a reader that ignores the charset sees ASCII as ASCII.
        if scrub.found_in(out):
            raise Unrewritable("the owner's address is still in the reply")
        refuse_if_visible(out, scrub)
    except Unrewritable:
        raise
    except Exception as exc:
        # The email package can fail in many ways on hostile input (deep nesting, broken
        # headers); each means the same: this reply cannot be sent safely.
        raise Unrewritable("the reply could not be parsed and rewritten") from exc
    return out
