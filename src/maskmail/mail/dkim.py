"""DKIM: signing forwards with dkimpy (off the event loop), and making a key and its record."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import dkim
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

KEY_BITS = 2048
TXT_CHUNK = 255  # one DNS character-string holds at most 255 bytes


class Signer:
    """Signs with the relay domain, so forwards pass DMARC with an aligned DKIM signature."""

    def __init__(self, private_key: bytes, *, selector: str, domain: str) -> None:
        self.private_key = private_key
        self.selector = selector.encode("ascii")
        self.domain = domain.encode("idna")

    def _sign(self, message: bytes) -> bytes:
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


def generate_key() -> tuple[bytes, bytes]:
    """A new RSA key: the private key (PEM) and the public key (DER), for the TXT record."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public


def txt_value(public_der: bytes) -> str:
    """The record's value as one string, as a resolver hands it to a verifier."""
    return f"v=DKIM1; k=rsa; p={base64.b64encode(public_der).decode('ascii')}"


def dns_record(public_der: bytes, *, selector: str, domain: str) -> str:
    """The zone-file line to publish, split into strings DNS can hold."""
    value = txt_value(public_der)
    chunks = " ".join(f'"{value[i : i + TXT_CHUNK]}"' for i in range(0, len(value), TXT_CHUNK))
    return f"{selector}._domainkey.{domain}. IN TXT ( {chunks} )"
