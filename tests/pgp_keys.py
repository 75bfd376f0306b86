"""OpenPGP keys made for the tests with gpg (nothing private is shipped): ones that can
encrypt (Curve25519 and RSA-3072), one that only signs, one expired, one revoked, one
whose only encryption subkey has expired, and a secret key; decrypting with them, by gpg
and in process."""

from __future__ import annotations

import atexit
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import gnupg
import pysequoia
import pytest

FIVE_YEARS_AGO = "20200101T000000"

# gpg is not on a fresh Debian (its priority is optional) and only `make test` installs
# it (scripts/system-deps.sh): a test that runs it is in the slow set.
NEEDS_GPG = pytest.mark.slow


@dataclass(frozen=True)
class Keys:
    gpg: gnupg.GPG
    good: str
    good_fingerprint: str
    rsa: str
    sign_only: str
    expired: str
    revoked: str
    subkey_expired: str
    secret: str

    def decrypt(self, armored: bytes) -> bytes:
        """By gpg, as most mail clients do."""
        result = self.gpg.decrypt(armored, always_trust=True)
        assert result.ok, result.status
        return bytes(result.data)

    def decrypt_in_process(self, armored: bytes) -> bytes:
        """By Sequoia, with the good key's secret half."""
        decryptor = pysequoia.Tsk.from_bytes(self.secret.encode()).decryptor()
        data = pysequoia.decrypt(armored, decryptor).bytes
        assert data is not None
        return data


def _gpg(gpg: gnupg.GPG, *args: str) -> None:
    subprocess.run(
        [gpg.gpgbinary, "--homedir", gpg.gnupghome, "--batch", "--quiet", "--passphrase", "",
         *args],
        check=True, capture_output=True,
    )  # fmt: skip


def _make(gpg: gnupg.GPG, uid: str, algo: str, usage: str, *extra: str, until: str = "1y") -> str:
    _gpg(gpg, *extra, "--quick-gen-key", uid, algo, usage, until)
    [found] = [k for k in gpg.list_keys() if uid in k["uids"]]
    return str(found["fingerprint"])


@cache
def keys() -> Keys:
    home = Path(tempfile.mkdtemp(prefix="maskmail-test-gpg-"))
    atexit.register(shutil.rmtree, home, True)
    gpg = gnupg.GPG(gnupghome=str(home))
    good = _make(gpg, "Owner <owner@example.com>", "future-default", "default")
    rsa = _make(gpg, "Rsa <rsa@example.com>", "rsa3072", "sign,cert")
    _gpg(gpg, "--quick-add-key", rsa, "rsa3072", "encr", "1y")
    sign = _make(gpg, "Signer <signer@example.com>", "ed25519", "sign")
    # Made with a clock five years back, for one year: expired now.
    old = _make(
        gpg, "Old <old@example.com>", "future-default", "default",
        "--faked-system-time", FIVE_YEARS_AGO,
    )  # fmt: skip
    # A primary key that never expires, whose one encryption subkey has.
    stale = _make(
        gpg, "Stale <stale@example.com>", "ed25519", "sign,cert",
        "--faked-system-time", FIVE_YEARS_AGO, until="never",
    )  # fmt: skip
    _gpg(gpg, "--faked-system-time", FIVE_YEARS_AGO, "--quick-add-key", stale, "cv25519",
         "encr", "1y")  # fmt: skip
    gone = _make(gpg, "Gone <gone@example.com>", "future-default", "default")
    certificate = (home / "openpgp-revocs.d" / f"{gone}.rev").read_text()
    # gpg writes the certificate with a colon before its armor, against a mistaken import.
    gpg.import_keys(certificate.replace(":-----BEGIN", "-----BEGIN"))
    return Keys(
        gpg=gpg,
        good=str(gpg.export_keys(good)),
        good_fingerprint=good,
        rsa=str(gpg.export_keys(rsa)),
        sign_only=str(gpg.export_keys(sign)),
        expired=str(gpg.export_keys(old)),
        revoked=str(gpg.export_keys(gone)),
        subkey_expired=str(gpg.export_keys(stale)),
        secret=str(gpg.export_keys(good, secret=True, passphrase="")),
    )


def stop_agent() -> None:
    """gpg started an agent for the secret keys it made (and decrypts with): stop it, if
    keys were made. Called at the end of the session (tests/conftest.py), in each xdist
    worker, which exits without running atexit."""
    if keys.cache_info().currsize:
        home = keys().gpg.gnupghome
        subprocess.run(["gpgconf", "--homedir", home, "--kill", "all"], check=False)


@contextmanager
def hung() -> Iterator[tuple[Callable[..., Any], threading.Event]]:
    """A stand-in for checking or encrypting that does not finish by itself: it waits for
    the block to end (its thread ends then too). The event says it was called."""
    entered, release = threading.Event(), threading.Event()

    def work(*args: object, **kwargs: object) -> Any:
        entered.set()
        release.wait(60)
        raise AssertionError("given up on long before")

    try:
        yield work, entered
    finally:
        release.set()


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
