"""DKIM keys: making one, and the value of the TXT record that publishes it. Shared by
the relay's own key (``maskmail dkim generate``) and each custom domain's."""

from __future__ import annotations

import base64

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

KEY_BITS = 2048
TXT_CHUNK = 255  # one DNS character-string holds at most 255 bytes


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
