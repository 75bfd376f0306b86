"""DKIM: signing forwards with dkimpy (off the event loop); the key and its record are
core/dkim_keys.py's, named here too for the mail plane's callers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import dkim

from maskmail.core.dkim_keys import KEY_BITS, dns_record, generate_key, txt_value
from maskmail.mail.smtp_pool import wire_form

__all__ = ["KEY_BITS", "Signer", "dns_record", "generate_key", "load_signer", "txt_value"]


class Signer:
    """Signs with the relay domain, so forwards pass DMARC with an aligned DKIM signature.

    Every signed message (forwards, replies, notices) passes here and leaves in
    ``wire_form``, so that the signature covers the bytes the receiver verifies.
    """

    def __init__(self, private_key: bytes, *, selector: str, domain: str) -> None:
        self.private_key = private_key
        self.selector = selector.encode("ascii")
        self.domain = domain.encode("idna")

    def _sign(self, message: bytes) -> bytes:
        message = wire_form(message)
        signature: bytes = dkim.sign(
            message,
            self.selector,
            self.domain,
            self.private_key,
            canonicalize=(b"relaxed", b"relaxed"),
        )
        return signature + message

    async def sign(self, message: bytes) -> bytes:
        # RSA signing and body hashing take milliseconds per message: use a thread.
        return await asyncio.to_thread(self._sign, message)


def load_signer(path: Path, *, selector: str, domain: str) -> Signer | None:
    """A signer when the key file exists; None means forwards go unsigned."""
    if not path.is_file():
        return None
    return Signer(path.read_bytes(), selector=selector, domain=domain)
