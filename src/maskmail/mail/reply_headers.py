"""A reply's header fields, every occurrence in every MIME part, rewritten.

A message is read as the list of all its fields: a second ``Message-ID`` or
``References``, or a ``Content-ID`` deep in a ``multipart/related``, is rewritten like
the first. Lookups by name (``get``, ``replace_header``) see only the first occurrence,
so fields are read and written back as a list.
"""

from __future__ import annotations

import hashlib
import re
from email.message import Message
from email.utils import encode_rfc2231, quote
from typing import Any

from maskmail.mail.scrub import Scrubber

# Fields holding message or content ids: an id is a token of its own, so one that holds
# the owner's address anywhere inside (``<1700000000.alice@example.com>``) points at them.
ID_HEADERS = frozenset({"message-id", "in-reply-to", "references", "content-id"})
PARAM_HEADERS = frozenset({"content-type", "content-disposition"})
# Every way an at sign can be written that a reader's decoding turns into one (an HTML
# or URL escape, an encoded word, a compatibility form): a text with none of them holds
# no address, however it is read.
AT_SIGNS = ("@", "&", "%", "=?", "\uff20", "\ufe6b")
_MSG_ID = re.compile(r"<[^<>]*>")


def masked_id(msg_id: str, domain: str) -> str:
    """A message id that does not show the owner's address; the same one for the same
    id, so the outside side's threads (and a part's ``cid:`` links) hold."""
    digest = hashlib.sha256(msg_id.strip().lower().encode("utf-8", "surrogateescape"))
    return f"<{digest.hexdigest()[:32]}@{domain}>"


def may_hold_address(raw: str) -> bool:
    """Whether a raw field value could show an address once decoded: an at sign in
    any form, an encoded word, or non-ASCII text. Most fields have none, and parsing
    every field of a message with thousands is slow."""
    return not raw.isascii() or any(sign in raw for sign in AT_SIGNS)


def set_fields(part: Message, fields: list[tuple[str, Any]]) -> None:
    """Replace the whole field list of ``part`` at once, repeated fields kept (item
    assignment allows one ``Message-ID``). The email package offers only deletion name
    by name, each a pass over all fields: quadratic on a part with thousands of
    distinct names, which a hostile message can carry."""
    vars(part)["_headers"] = list(fields)


class HeaderScrub:
    """Rewrites the fields of each part, and remembers the Content-IDs it replaced so
    the ``cid:`` links in the bodies can follow."""

    def __init__(self, scrub: Scrubber, owner: str, domain: str) -> None:
        self.scrub = scrub
        self.domain = domain
        self.owner_domain = owner.rpartition("@")[2].lower()
        # Old Content-ID (without its angle brackets) to the new one.
        self.content_ids: dict[str, str] = {}

    def _points_at_owner(self, msg_id: str, by_domain: bool) -> bool:
        if self.scrub.seen_in(msg_id):
            return True
        if not by_domain:
            return False
        right = msg_id.strip().strip("<>").rpartition("@")[2].strip().lower()
        return right == self.owner_domain or right.endswith("." + self.owner_domain)

    def _ids(self, name: str, text: str, top: bool) -> str:
        """Ids that point at the owner, replaced: any that holds their address, and the
        reply's own id and its parts' Content-IDs when they sit at the owner's domain
        (Thunderbird takes both from the sender's address: half of it, for a domain of
        one's own). Ids in In-Reply-To and References at that domain may be the outside
        sender's own (both on one provider), so they stay."""
        by_domain = name == "content-id" or (top and name == "message-id")
        cleaned = text
        for found in _MSG_ID.findall(text):
            if self._points_at_owner(found, by_domain):
                new = masked_id(found, self.domain)
                cleaned = cleaned.replace(found, new)
                if name == "content-id":
                    self.content_ids[found[1:-1].strip()] = new[1:-1]
        if self.scrub.seen_in(cleaned):
            cleaned = masked_id(cleaned, self.domain)
        return cleaned

    def _params(self, header: object) -> str | None:
        """MIME parameters as the reader decodes them (RFC 2231 encoded and continued),
        such as an attachment named after the owner: written again when they hold the
        address; None when they do not."""
        params = dict(getattr(header, "params", None) or {})
        if not any(self.scrub.seen_in(str(value)) for value in params.values()):
            return None
        main = getattr(header, "content_type", None) or getattr(header, "content_disposition", "")
        items = [str(main)]
        for key, value in params.items():
            value = self.scrub.everywhere(str(value))
            if value.isascii():
                items.append(f'{key}="{quote(value)}"')
            else:
                items.append(f"{key}*={encode_rfc2231(value, 'utf-8')}")
        return "; ".join(items)

    def _cleaned(self, part: Message, name: str, raw: Any, top: bool) -> str | None:
        """The field's new value, or None when it stays as it came."""
        if not may_hold_address(str(raw)):
            return None
        key = name.lower()
        header = part.policy.header_fetch_parse(name, raw)
        text = str(header)
        cleaned = (self._params(header) if key in PARAM_HEADERS else None) or text
        if key in ID_HEADERS:
            cleaned = self._ids(key, cleaned, top)
        cleaned = self.scrub.text(cleaned)
        return None if cleaned == text else cleaned

    def rewrite(self, part: Message, *, top: bool) -> None:
        """Every field of ``part``, each occurrence, in order; unchanged ones stay as
        they came, byte for byte."""
        fields = list(part.raw_items())
        written = [self._cleaned(part, name, raw, top) for name, raw in fields]
        if all(new is None for new in written):
            return
        set_fields(
            part,
            [
                (name, raw) if new is None else part.policy.header_store_parse(name, new)
                for (name, raw), new in zip(fields, written, strict=True)
            ],
        )


class CidLinks:
    """``cid:`` links (RFC 2392) in a body, pointed at the Content-IDs they named before
    those were replaced, so a masked inline image still shows."""

    def __init__(self, content_ids: dict[str, str]) -> None:
        self._new = {old.lower(): new for old, new in content_ids.items()}
        olds = sorted(content_ids, key=len, reverse=True)
        pattern = rf"cid:({'|'.join(map(re.escape, olds))})(?![\w.@-])"
        self._text = re.compile(pattern, re.IGNORECASE) if olds else None
        self._bytes = re.compile(pattern.encode("utf-8"), re.IGNORECASE) if olds else None

    def text(self, value: str) -> str:
        if self._text is None:
            return value
        return self._text.sub(lambda m: "cid:" + self._new[m.group(1).lower()], value)

    def data(self, value: bytes) -> bytes:
        if self._bytes is None:
            return value
        return self._bytes.sub(
            lambda m: b"cid:" + self._new[m.group(1).decode("utf-8").lower()].encode(), value
        )
