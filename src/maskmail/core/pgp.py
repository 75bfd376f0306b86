"""What the rest of maskmail knows of a mailbox's OpenPGP key (the work is ``openpgp``)."""

from __future__ import annotations

from dataclasses import dataclass

# The outer Subject of a forward whose subject travels encrypted (a protected header).
HIDDEN_SUBJECT = "..."


@dataclass(frozen=True, slots=True)
class KeyFacts:
    """A checked public key."""

    fingerprint: str
    # Unix seconds; None when the key does not expire.
    expires_time: int | None


@dataclass(frozen=True, slots=True)
class DeliveryKey:
    """The key a forward to one mailbox is encrypted to."""

    armored: str
    fingerprint: str
    encrypt_subject: bool
    # Encrypting failed before and the owner was told (cleared by a success).
    failed: bool
