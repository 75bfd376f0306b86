"""openpgp: keys are checked and encrypted to in process (Sequoia); what comes out
decrypts with gpg and with Sequoia; a key that cannot encrypt fails loudly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pysequoia
import pytest

from maskmail.core.errors import InvalidAddress
from maskmail.openpgp import EncryptionFailed, check_key, encrypt
from tests.pgp_keys import NEEDS_GPG, keys

pytestmark = NEEDS_GPG


@pytest.mark.parametrize("kind", ["good", "rsa"])
def test_encrypts_to_the_key_and_decrypts_by_gpg_and_in_process(kind: str) -> None:
    armored = getattr(keys(), kind)
    facts = check_key(armored)
    [listed] = keys().gpg.scan_keys_mem(armored)
    assert facts.fingerprint == listed["fingerprint"]
    assert facts.expires_time == int(listed["expires"])
    data = bytes(range(256)) * 4000
    out = encrypt(data, armored, facts.fingerprint)
    assert out.startswith(b"-----BEGIN PGP MESSAGE-----")
    assert keys().decrypt(out) == data
    if kind == "good":
        assert keys().decrypt_in_process(out) == data


def test_an_expired_key_fails_rather_than_encrypting_to_nothing() -> None:
    [found] = keys().gpg.scan_keys_mem(keys().expired)
    with pytest.raises(EncryptionFailed) as failed:
        encrypt(b"secret", keys().expired, str(found["fingerprint"]))
    assert (failed.value.code, failed.value.reason) == ("expired", "the key has expired")


def test_a_key_that_expires_after_its_check_fails_from_then_on() -> None:
    facts = check_key(keys().good)
    assert facts.expires_time is not None
    after = datetime.fromtimestamp(facts.expires_time, UTC) + timedelta(seconds=1)
    with pytest.raises(EncryptionFailed) as failed:
        encrypt(b"secret", keys().good, facts.fingerprint, now=after)
    assert failed.value.code == "expired"


def test_an_expired_encryption_subkey_is_never_used() -> None:
    """Sequoia alone would take it when no live one is left; maskmail takes it out."""
    cert = pysequoia.Cert.from_bytes(keys().subkey_expired.encode())
    assert pysequoia.encrypt(b"x", [cert]).startswith(b"-----BEGIN PGP MESSAGE-----")
    with pytest.raises(InvalidAddress) as refused:
        check_key(keys().subkey_expired)
    assert refused.value.details["reason"] == "cannot_encrypt"
    with pytest.raises(EncryptionFailed):
        encrypt(b"secret", keys().subkey_expired, cert.fingerprint)


def test_a_revoked_key_fails_though_sequoia_would_encrypt() -> None:
    cert = pysequoia.Cert.from_bytes(keys().revoked.encode())
    assert cert.is_revoked and pysequoia.encrypt(b"x", [cert])
    with pytest.raises(EncryptionFailed) as failed:
        encrypt(b"secret", keys().revoked, cert.fingerprint)
    assert failed.value.code == "revoked"


def test_a_fingerprint_the_key_does_not_have_fails() -> None:
    with pytest.raises(EncryptionFailed):
        encrypt(b"secret", keys().good, "0" * 40)


@pytest.mark.parametrize(
    ("text", "reason", "message"),
    [
        ("secret", "unparseable", "the key must be one ASCII-armored OpenPGP public key block"),
        # Secret packets under a public key's armor line.
        ("secret_as_public", "unparseable", "give the public key only, never the secret key"),
        ("empty", "unparseable", "the key could not be read"),
        ("two", "several_keys", "give one key, not several"),
        ("sign_only", "cannot_encrypt", "the key has no usable encryption (sub)key"),
    ],
)
def test_what_is_refused_and_why(text: str, reason: str, message: str) -> None:
    armored = {
        "secret_as_public": keys().secret.replace("PRIVATE KEY", "PUBLIC KEY"),
        "empty": "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n-----END PGP PUBLIC KEY BLOCK-----\n",
        "two": keys().good + keys().rsa,
    }.get(text) or getattr(keys(), text)
    with pytest.raises(InvalidAddress) as refused:
        check_key(armored)
    assert refused.value.details == {"field": "public_key", "reason": reason}
    assert refused.value.message == message
