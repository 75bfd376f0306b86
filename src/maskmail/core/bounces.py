"""Signed bounce addresses: the envelope sender of every forward, at the relay domain.

A bounce that comes back names the relay address it belongs to and proves, by an HMAC
over that and the day it was sent, that we made it; forged bounces (backscatter) fail.
"""

from __future__ import annotations

import hashlib
import hmac

PREFIX = "bounce"
SIGNATURE_HEX = 16  # 64 bits: guessing one takes 2^63 tries on average
DAY = 86_400


def _signature(address_id: int, day: int, secret: bytes) -> str:
    message = f"{address_id}.{day}".encode("ascii")
    return hmac.new(secret, message, hashlib.sha256).hexdigest()[:SIGNATURE_HEX]


def bounce_address(address_id: int, now: int, secret: bytes, domain: str) -> str:
    day = now // DAY
    return f"{PREFIX}+{address_id}.{day}.{_signature(address_id, day, secret)}@{domain}"


def verify_bounce(local: str, now: int, secret: bytes, max_age_days: int = 7) -> int | None:
    """The relay address id a bounce local part stands for, or None if forged or expired."""
    tag, plus, rest = local.lower().partition("+")
    parts = rest.split(".")
    if tag != PREFIX or not plus or len(parts) != 3:
        return None
    raw_id, raw_day, signature = parts
    if not (raw_id.isdecimal() and raw_day.isdecimal() and raw_id.isascii() and raw_day.isascii()):
        return None
    address_id, day = int(raw_id), int(raw_day)
    if not 0 <= now // DAY - day <= max_age_days:
        return None
    if not hmac.compare_digest(signature, _signature(address_id, day, secret)):
        return None
    return address_id
