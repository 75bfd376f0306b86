"""API keys: prefix, entropy, hashing."""

from __future__ import annotations

import hashlib

from maskmail.core import keys


def test_keys_have_the_prefix_and_are_unique() -> None:
    made = {keys.generate_key() for _ in range(200)}
    assert len(made) == 200
    assert all(k.startswith(keys.PREFIX) and len(k) >= len(keys.PREFIX) + 40 for k in made)


def test_hash_is_sha256_hex() -> None:
    assert keys.hash_key("mm_live_x") == hashlib.sha256(b"mm_live_x").hexdigest()
