"""OpenPGP in this process: checking a mailbox's key, and encrypting forwards to it.

Why pysequoia (Sequoia-PGP): bench/pgp_libs.py measured the maintained OpenPGP
libraries on PyPI against python-gnupg, which starts a gpg process for every message
(docs/benchmarks.md, "PGP"); pysequoia was the fastest on every kind of key, is kept by
Sequoia's own developers, and installs as a wheel. Nothing runs beside maskmail: no gpg
process, no gpg-agent, no key ring on disk, so nothing outlives it.

Sequoia parses the key, checks its self-signatures under its standard policy and picks
the encryption (sub)keys. Two rules are ours, because pysequoia's ``encrypt`` goes on
with an expired encryption subkey when no live one is left, and with a revoked or
expired certificate: such a certificate is refused, and subkeys whose newest binding
says they have expired are taken out before Sequoia picks (``_usable``). Both doors use
this module, from a thread (``asyncio.to_thread``), under ``MASKMAIL_PGP_TIMEOUT``.
pysequoia keeps the GIL while it works, so the event loop waits as long as one message
takes to encrypt: a fraction of a millisecond for common mail, longer for large
attachments (``bench/pgp_libs.py --size``), still less CPU than a gpg process.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache

import pysequoia
from pysequoia import Cert
from pysequoia.packet import Packet, PacketPile, SignatureType, Tag

from maskmail.core.errors import InvalidAddress
from maskmail.core.pgp import KeyFacts

PUBLIC_KEY_ARMOR = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
# Real keys with a few signatures are a few kilobytes; photo ids make them large.
MAX_KEY_CHARS = 64 * 1024
_SECRET = (Tag.SecretKey, Tag.SecretSubkey)


class EncryptionFailed(Exception):
    """The key cannot be encrypted to (now); ``reason`` is safe to show the owner and
    ``code`` is the API's word for it (``details.reason`` of a refused key)."""

    def __init__(self, reason: str, code: str = "cannot_encrypt") -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


@dataclass(frozen=True, slots=True)
class _Key:
    """A parsed key: what does not change with the clock."""

    packets: tuple[Packet, ...]
    cert: Cert


# Bounded: a key may be 64 KB, and the API reads any key it is given.
@lru_cache(maxsize=128)
def _parse(armored: str) -> _Key:
    """One public key and nothing else, or EncryptionFailed. Cached: every forward to a
    mailbox reads the same key text."""
    text = armored.strip()
    if not text.startswith(PUBLIC_KEY_ARMOR):
        raise EncryptionFailed(
            "the key must be one ASCII-armored OpenPGP public key block", "unparseable"
        )
    data = text.encode("utf-8", "replace")
    try:
        certs = Cert.split_bytes(data)
        if len(certs) > 1:
            raise EncryptionFailed("give one key, not several", "several_keys")
        [cert] = certs
        if any(p.tag in _SECRET for p in PacketPile.from_bytes(data)):
            raise EncryptionFailed("give the public key only, never the secret key", "unparseable")
        # Its public parts, as Sequoia keeps them.
        packets = tuple(PacketPile.from_bytes(bytes(cert)))
    except (RuntimeError, ValueError) as exc:  # ValueError: no key at all
        raise EncryptionFailed("the key could not be read", "unparseable") from exc
    return _Key(packets, cert)


def _subkey_expiry(group: list[Packet]) -> datetime | None:
    """When a subkey expires by its newest binding signature (None: never). The group is
    the subkey packet and the signatures that follow it."""
    bindings = [p for p in group[1:] if p.signature_type == SignatureType.SubkeyBinding]
    if not bindings:
        return None
    newest = max(bindings, key=lambda p: p.signature_created or datetime.min.replace(tzinfo=UTC))
    created, period = group[0].key_created, newest.key_validity_period
    return created + period if created is not None and period else None


def _usable(key: _Key, now: datetime) -> Cert:
    """The certificate to encrypt to at ``now``: not revoked, not expired, without the
    subkeys that have expired; EncryptionFailed otherwise."""
    if key.cert.is_revoked:
        raise EncryptionFailed("the key is revoked", "revoked")
    expires = key.cert.expiration
    if expires is not None and expires <= now:
        raise EncryptionFailed("the key has expired", "expired")
    kept: list[Packet] = []
    group: list[Packet] = []
    for packet in (*key.packets, None):
        if packet is None or packet.tag == Tag.PublicSubkey:
            if group:
                expiry = _subkey_expiry(group)
                if expiry is None or expiry > now:
                    kept += group
            group = [] if packet is None else [packet]
        elif group:
            group.append(packet)
        else:
            kept.append(packet)
    return Cert.from_packets(kept) if len(kept) < len(key.packets) else key.cert


def _encrypt(data: bytes, cert: Cert) -> bytes:
    try:
        return pysequoia.encrypt(data, [cert], armor=True)
    except RuntimeError as exc:
        # Sequoia found no encryption (sub)key it may use: none, revoked or too weak.
        raise EncryptionFailed("the key has no usable encryption (sub)key") from exc


def _facts(key: _Key) -> KeyFacts:
    expires = key.cert.expiration
    # Upper case, as gpg wrote them: keys stored before keep matching.
    fingerprint = key.cert.fingerprint.upper()
    return KeyFacts(fingerprint, int(expires.timestamp()) if expires is not None else None)


def check_key(armored: str, now: datetime | None = None) -> KeyFacts:
    """The facts of one public key that can encrypt now; InvalidAddress (a 422) with
    the reason otherwise."""
    if len(armored) > MAX_KEY_CHARS:
        raise _refused(f"the key is longer than {MAX_KEY_CHARS} characters", "too_long")
    try:
        key = _parse(armored)
        _encrypt(b"", _usable(key, now or datetime.now(UTC)))
    except EncryptionFailed as exc:
        raise _refused(exc.reason, exc.code) from exc
    return _facts(key)


def _refused(message: str, reason: str) -> InvalidAddress:
    return InvalidAddress(message, {"field": "public_key", "reason": reason})


def encrypt(data: bytes, armored: str, fingerprint: str, now: datetime | None = None) -> bytes:
    """``data`` encrypted to the key, ASCII-armored; EncryptionFailed when it cannot be
    (it expired or was revoked since it was checked, or is not the key it was)."""
    key = _parse(armored)
    if key.cert.fingerprint.upper() != fingerprint.upper():
        raise EncryptionFailed("the key is not the one that was checked")
    return _encrypt(data, _usable(key, now or datetime.now(UTC)))
