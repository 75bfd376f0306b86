"""OpenPGP keys made for the tests with gpg (nothing private is shipped): one that can
encrypt, one that only signs, one expired and one revoked; and decrypting with them."""

from __future__ import annotations

import atexit
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import gnupg


@dataclass(frozen=True)
class Keys:
    gpg: gnupg.GPG
    good: str
    good_fingerprint: str
    sign_only: str
    expired: str
    revoked: str

    def decrypt(self, armored: bytes) -> bytes:
        result = self.gpg.decrypt(armored, always_trust=True)
        assert result.ok, result.status
        return bytes(result.data)


def _make(gpg: gnupg.GPG, uid: str, algo: str, usage: str, *extra: str) -> str:
    subprocess.run(
        [gpg.gpgbinary, "--homedir", gpg.gnupghome, "--batch", "--quiet", *extra,
         "--passphrase", "", "--quick-gen-key", uid, algo, usage, "1y"],
        check=True, capture_output=True,
    )  # fmt: skip
    [found] = [k for k in gpg.list_keys() if uid in k["uids"]]
    return str(found["fingerprint"])


@cache
def keys() -> Keys:
    home = Path(tempfile.mkdtemp(prefix="maskmail-test-gpg-"))
    atexit.register(shutil.rmtree, home, True)
    gpg = gnupg.GPG(gnupghome=str(home))
    good = _make(gpg, "Owner <owner@example.com>", "future-default", "default")
    sign = _make(gpg, "Signer <signer@example.com>", "ed25519", "sign")
    # Made with a clock five years back, for one year: expired now.
    old = _make(
        gpg, "Old <old@example.com>", "future-default", "default",
        "--faked-system-time", "20200101T000000",
    )  # fmt: skip
    gone = _make(gpg, "Gone <gone@example.com>", "future-default", "default")
    certificate = (home / "openpgp-revocs.d" / f"{gone}.rev").read_text()
    # gpg writes the certificate with a colon before its armor, against a mistaken import.
    gpg.import_keys(certificate.replace(":-----BEGIN", "-----BEGIN"))
    return Keys(
        gpg=gpg,
        good=str(gpg.export_keys(good)),
        good_fingerprint=good,
        sign_only=str(gpg.export_keys(sign)),
        expired=str(gpg.export_keys(old)),
        revoked=str(gpg.export_keys(gone)),
    )


@cache
def _fingerprint_of(uid: str) -> str:
    return _make(keys().gpg, uid, "ed25519", "sign")


def key_of(uid: str) -> str:
    """The armored public key (ed25519, signing only) whose user id is ``uid``, made on
    first use."""
    return str(keys().gpg.export_keys(_fingerprint_of(uid)))


def binary_key_of(uid: str) -> bytes:
    """The same key as its binary packets."""
    return bytes(keys().gpg.export_keys(_fingerprint_of(uid), armor=False))


def signed_by(uid: str, data: bytes, *, clearsign: bool) -> str:
    """``data`` signed by ``uid``'s key: clear-signed text, or an armored (compressed,
    unencrypted) OpenPGP message. Chosen by its address, as mail clients do, the key
    makes gpg name that address in the signature (the signer's user id)."""
    _fingerprint_of(uid)
    address = uid.rpartition("<")[2].rstrip(">")
    result = keys().gpg.sign(data, keyid=address, clearsign=clearsign)
    assert result.data, result.status
    return str(result)
