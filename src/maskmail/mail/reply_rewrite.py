"""Rewriting a reply: the owner's address taken out of every header and text part.

Unlike a forward, a reply's body must change (the owner's address sits in quoted text,
signatures and ``mailto:`` links), so the whole message is parsed and written again.
What cannot be rewritten with certainty is refused, never sent half-scrubbed.
"""

from __future__ import annotations

import base64
import quopri
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.utils import format_datetime, formataddr

from maskmail.core.errors import Unrewritable

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
# How "@" appears in text and HTML: plain, as an HTML character reference, in a URL.
_AT_FORMS = ("@", "&#64;", "&#x40;", "%40")
_WIDE_CHARSETS = ("utf-16", "utf-32", "utf_16", "utf_32")
# Transfer encodings a part can be written back in; anything else is left alone, and
# refused if the owner's address is inside.
_WRITABLE = frozenset({"7bit", "8bit", "binary", "quoted-printable", "base64"})
_POLICY = policy.default.clone(linesep="\r\n")


@dataclass(frozen=True, slots=True)
class Reply:
    """Everything the rewrite needs besides the message."""

    owner_mailbox: str
    relay_address: str
    outside: str
    # The owner's display name, when they chose to show it.
    display_name: str
    domain: str
    when: datetime


class Scrubber:
    """Replaces one mailbox by another wherever it appears as an address, in any case."""

    def __init__(self, owner: str, relay: str) -> None:
        local, _, domain = owner.rpartition("@")
        forms = "|".join(re.escape(form) for form in _AT_FORMS)
        # Not part of a longer address: "malice@x" and "alice@x.evil" are other mailboxes.
        core = rf"(?<![\w.+-]){re.escape(local)}({forms}){re.escape(domain)}(?![\w-]|\.[\w-])"
        self._text = re.compile(core, re.IGNORECASE)
        self._bytes = re.compile(core.encode("utf-8"), re.IGNORECASE)
        self._relay_local, _, self._relay_domain = relay.rpartition("@")

    def text(self, value: str) -> str:
        return self._text.sub(
            lambda m: f"{self._relay_local}{m.group(1)}{self._relay_domain}", value
        )

    def data(self, value: bytes) -> bytes:
        local, domain = self._relay_local.encode(), self._relay_domain.encode()
        return self._bytes.sub(lambda m: local + m.group(1) + domain, value)

    def found_in(self, value: bytes) -> bool:
        return self._bytes.search(value) is not None


def _set_payload(part: Message, data: bytes) -> None:
    """Put decoded bytes back in the part's own transfer encoding."""
    encoding = str(part.get("content-transfer-encoding", "7bit")).strip().lower()
    if encoding == "base64":
        part.set_payload(base64.encodebytes(data).decode("ascii"))
    elif encoding == "quoted-printable":
        part.set_payload(quopri.encodestring(data).decode("ascii"))
    else:
        part.set_payload(data.decode("ascii", "surrogateescape"))


def _scrub_payload(part: Message, scrub: Scrubber) -> None:
    if part.is_multipart():
        return
    encoding = str(part.get("content-transfer-encoding", "7bit")).strip().lower()
    if part.get_content_maintype() != "text" and encoding == "base64":
        return  # a binary attachment; the final check catches an address left in clear
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes):
        return
    charset = str(part.get_content_charset() or "us-ascii").lower()
    if charset.startswith(_WIDE_CHARSETS):
        try:
            changed = scrub.text(data.decode(charset)).encode(charset)
        except (UnicodeError, LookupError) as exc:
            raise Unrewritable("a text part could not be decoded") from exc
    else:
        # The address is ASCII, and so is every other charset's ASCII range.
        changed = scrub.data(data)
    if changed == data:
        return
    if encoding not in _WRITABLE:
        raise Unrewritable(f"a part in the {encoding!r} transfer encoding holds the address")
    _set_payload(part, changed)


def _scrub_headers(part: Message, scrub: Scrubber) -> None:
    for name, value in list(part.items()):
        text = str(value)
        cleaned = scrub.text(text)
        if cleaned != text:
            part.replace_header(name, cleaned)


def rewrite_reply(raw: bytes, reply: Reply) -> bytes:
    """The reply as the outside recipient gets it: from the relay address, to them."""
    scrub = Scrubber(reply.owner_mailbox, reply.relay_address)
    try:
        message = BytesParser(policy=policy.default).parsebytes(raw)
        assert isinstance(message, EmailMessage)
        for name in {key.lower() for key in message} - KEPT:
            del message[name]
        for part in message.walk():
            if part is not message:
                _scrub_headers(part, scrub)
            _scrub_payload(part, scrub)
            # The text around a multipart's parts, which some clients fill.
            for side in ("preamble", "epilogue"):
                text = getattr(part, side)
                if isinstance(text, str):
                    setattr(part, side, scrub.text(text))
        _scrub_headers(message, scrub)
        shown = scrub.text(reply.display_name)
        message["From"] = formataddr((shown, reply.relay_address), "utf-8")
        message["To"] = reply.outside
        if "message-id" not in message:
            message["Message-ID"] = f"<{secrets.token_hex(16)}@{reply.domain}>"
        if "date" not in message:
            message["Date"] = format_datetime(reply.when)
        out = message.as_bytes(policy=_POLICY)
    except Unrewritable:
        raise
    except Exception as exc:
        # The email package can fail in many ways on hostile input (deep nesting, broken
        # headers); each means the same: this reply cannot be sent safely.
        raise Unrewritable("the reply could not be parsed and rewritten") from exc
    if scrub.found_in(out):
        raise Unrewritable("the owner's address is still in the reply")
    return out
