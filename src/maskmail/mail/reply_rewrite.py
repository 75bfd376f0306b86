"""Rewriting a reply: the owner's address taken out of every header and text part.

Unlike a forward, a reply's body must change (the owner's address sits in quoted text,
signatures and ``mailto:`` links), so the whole message is parsed and written again.
What cannot be rewritten with certainty is refused, never sent half-scrubbed.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import quopri
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.utils import encode_rfc2231, format_datetime, formataddr, quote

from maskmail.core.errors import Unrewritable
from maskmail.mail.reply_check import refuse_if_visible
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
_PARAM_HEADERS = ("content-type", "content-disposition")
_ID_HEADERS = ("message-id", "in-reply-to", "references")
_MSG_ID = re.compile(r"<[^<>]*>")


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


def _set_payload(part: Message, data: bytes) -> None:
    """Put decoded bytes back in the part's own transfer encoding."""
    encoding = str(part.get("content-transfer-encoding", "7bit")).strip().lower()
    if encoding == "base64":
        part.set_payload(base64.encodebytes(data).decode("ascii"))
    elif encoding == "quoted-printable":
        part.set_payload(quopri.encodestring(data).decode("ascii"))
    else:
        part.set_payload(data.decode("ascii", "surrogateescape"))


@functools.cache
def _ascii_compatible(charset: str) -> bool:
    """Whether ASCII text is the same bytes in ``charset`` (not so in UTF-7, UTF-16,
    EBCDIC). A charset Python does not know is read as ASCII, as most readers would."""
    try:
        return _PRINTABLE.decode(charset) == _PRINTABLE.decode("ascii")
    except LookupError:
        return True
    except UnicodeError:
        return False


def _scrub_text(data: bytes, charset: str, scrub: Scrubber) -> bytes:
    if scrub.ascii and _ascii_compatible(charset):
        return scrub.data(data)
    # Undeclared 8-bit bytes ride along in an ASCII-compatible charset; elsewhere a
    # byte that does not decode means the part cannot be read with certainty.
    errors = "surrogateescape" if _ascii_compatible(charset) else "strict"
    try:
        return scrub.text(data.decode(charset, errors)).encode(charset, errors)
    except (UnicodeError, LookupError) as exc:
        raise Unrewritable("a text part could not be decoded") from exc


def _scrub_payload(part: Message, scrub: Scrubber) -> None:
    if part.is_multipart():
        return
    encoding = str(part.get("content-transfer-encoding", "7bit")).strip().lower()
    if part.get_content_maintype() != "text" and encoding == "base64":
        return  # a binary attachment; the final check refuses it if the address shows
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes):
        return
    changed = _scrub_text(data, str(part.get_content_charset() or "us-ascii").lower(), scrub)
    if changed == data:
        return
    if encoding not in _WRITABLE:
        raise Unrewritable(f"a part in the {encoding!r} transfer encoding holds the address")
    _set_payload(part, changed)


def _scrub_params(part: Message, scrub: Scrubber) -> None:
    """MIME parameters as the reader decodes them (RFC 2231 encoded and continued), such
    as an attachment named after the owner: written again when they hold the address."""
    for name in _PARAM_HEADERS:
        header = part.get(name)
        params = dict(getattr(header, "params", None) or {})
        if not any(scrub.seen_in(str(value)) for value in params.values()):
            continue
        main = getattr(header, "content_type", None) or getattr(header, "content_disposition", "")
        items = [str(main)]
        for key, value in params.items():
            value = scrub.everywhere(str(value))
            if value.isascii():
                items.append(f'{key}="{quote(value)}"')
            else:
                items.append(f"{key}*={encode_rfc2231(value, 'utf-8')}")
        part.replace_header(name, "; ".join(items))


def _masked_id(msg_id: str, domain: str) -> str:
    """A message id that does not show the owner's address; the same one for the same
    id, so the outside side's threads hold across replies."""
    digest = hashlib.sha256(msg_id.strip().lower().encode("utf-8", "surrogateescape"))
    return f"<{digest.hexdigest()[:32]}@{domain}>"


def _points_at_owner(msg_id: str, scrub: Scrubber, owner_domain: str | None) -> bool:
    if scrub.seen_in(msg_id):
        return True
    if owner_domain is None:
        return False
    right = msg_id.strip().strip("<>").rpartition("@")[2].strip().lower()
    return right == owner_domain or right.endswith("." + owner_domain)


def _scrub_ids(message: Message, scrub: Scrubber, owner: str, domain: str) -> None:
    """Ids that point at the owner are replaced, by the same id each time, so threads
    hold: any that holds their address, and the reply's own id when it sits at their
    domain (Thunderbird takes it from the sender's address: half of it, for a domain of
    one's own). Ids in In-Reply-To and References at that domain may be the outside
    sender's own (both on one provider), so they stay."""
    for name in _ID_HEADERS:
        value = message.get(name)
        if value is None:
            continue
        text = str(value)
        by_domain = owner.rpartition("@")[2].lower() if name == "message-id" else None
        ids = [m.group() for m in _MSG_ID.finditer(text)]
        cleaned = text
        for found in ids:
            if _points_at_owner(found, scrub, by_domain):
                cleaned = cleaned.replace(found, _masked_id(found, domain))
        if scrub.seen_in(cleaned):
            cleaned = _masked_id(cleaned, domain)
        if cleaned != text:
            message.replace_header(name, cleaned)


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
        _scrub_ids(message, scrub, reply.owner_mailbox, reply.domain)
        for part in message.walk():
            _scrub_params(part, scrub)
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
        # Byte by byte too: a reader that ignores the charset sees ASCII as ASCII.
        if scrub.found_in(out):
            raise Unrewritable("the owner's address is still in the reply")
        refuse_if_visible(BytesParser(policy=policy.default).parsebytes(out), scrub)
    except Unrewritable:
        raise
    except Exception as exc:
        # The email package can fail in many ways on hostile input (deep nesting, broken
        # headers); each means the same: this reply cannot be sent safely.
        raise Unrewritable("the reply could not be parsed and rewritten") from exc
    return out
