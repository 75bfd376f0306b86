"""OpenPGP through the gpg binary (python-gnupg): checking a mailbox's key, encrypting to it.

gpg was chosen over pgpy by measurement (docs/benchmarks.md, "PGP"). Both doors
use it: the API checks keys, the mail plane encrypts. Each process has one private gpg
home, made on first use; keys are imported into it when first encrypted to. Blocking:
callers run these functions in a thread.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import threading
from functools import lru_cache

import gnupg

from maskmail.core.errors import InvalidAddress, ToolUnavailable
from maskmail.core.pgp import KeyFacts

PUBLIC_KEY_ARMOR = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
# Real keys with a few signatures are a few kilobytes; photo ids make them large.
MAX_KEY_CHARS = 64 * 1024


class EncryptionFailed(Exception):
    """gpg could not encrypt to the key; ``reason`` is gpg's status, safe to show."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _refuse(message: str, reason: str) -> InvalidAddress:
    return InvalidAddress(message, {"field": "public_key", "reason": reason})


class Gpg:
    """One gpg home of this process's own, in a temporary directory."""

    def __init__(self) -> None:
        binary = shutil.which("gpg")
        if binary is None:
            raise EncryptionFailed("gpg is not installed (scripts/system-deps.sh)")
        self._home = tempfile.TemporaryDirectory(prefix="maskmail-gpg-")
        self._gpg = gnupg.GPG(gpgbinary=binary, gnupghome=self._home.name)
        self._lock = threading.Lock()
        # Fingerprint to the digest of the key text last imported for it.
        self._imported: dict[str, str] = {}

    def check(self, armored: str) -> KeyFacts:
        """The facts of one public key that can encrypt now; InvalidAddress (a 422) with
        the reason otherwise. Nothing is imported."""
        text = armored.strip()
        if not text.startswith(PUBLIC_KEY_ARMOR):
            raise _refuse(
                "the key must be one ASCII-armored OpenPGP public key block", "unparseable"
            )
        found = list(self._gpg.scan_keys_mem(text))
        if not found:
            raise _refuse("the key could not be read", "unparseable")
        if len(found) > 1:
            raise _refuse("give one key, not several", "several_keys")
        key = found[0]
        if key.get("type") != "pub":
            raise _refuse("give the public key only", "unparseable")
        validity = str(key.get("trust", ""))
        if validity == "r":
            raise _refuse("the key is revoked", "revoked")
        if validity == "e":
            raise _refuse("the key has expired", "expired")
        # Upper case: what the key as a whole can do, its usable subkeys counted.
        if "E" not in str(key.get("cap", "")):
            raise _refuse("the key has no usable encryption (sub)key", "cannot_encrypt")
        expires = str(key.get("expires") or "")
        return KeyFacts(str(key["fingerprint"]), int(expires) if expires.isdigit() else None)

    def _import(self, armored: str, fingerprint: str) -> None:
        digest = hashlib.sha256(armored.encode("utf-8")).hexdigest()
        with self._lock:
            if self._imported.get(fingerprint) == digest:
                return
            result = self._gpg.import_keys(armored)
            if fingerprint not in (result.fingerprints or []):
                raise EncryptionFailed("the key could not be imported")
            self._imported[fingerprint] = digest

    def encrypt(self, data: bytes, armored: str, fingerprint: str) -> bytes:
        """``data`` encrypted to the key, ASCII-armored; EncryptionFailed when gpg will
        not (an expired or revoked key, gpg itself failing)."""
        self._import(armored, fingerprint)
        try:
            result = self._gpg.encrypt(data, [fingerprint], always_trust=True, armor=True)
        except (OSError, ValueError) as exc:
            raise EncryptionFailed("gpg could not be run") from exc
        if not result.ok:
            raise EncryptionFailed(str(result.status or "gpg failed"))
        return bytes(result.data)


@lru_cache(maxsize=1)
def gpg() -> Gpg:
    """This process's gpg, made on first use (a server without keys never needs gpg)."""
    return Gpg()


def check_key(armored: str) -> KeyFacts:
    if len(armored) > MAX_KEY_CHARS:
        raise _refuse(f"the key is longer than {MAX_KEY_CHARS} characters", "too_long")
    try:
        return gpg().check(armored)
    except EncryptionFailed as exc:
        raise ToolUnavailable(f"keys cannot be checked here: {exc.reason}") from exc
