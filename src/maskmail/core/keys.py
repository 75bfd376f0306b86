"""The API key rules: random, recognisable by their prefix, stored only as a SHA-256."""

from __future__ import annotations

import hashlib
import secrets

PREFIX = "mm_live_"
# Keys are 51 characters; a header far longer is refused before any work on its text.
MAX_HEADER_CHARS = 512


def generate_key() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
