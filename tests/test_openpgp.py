"""openpgp: gpg checks a key and encrypts to it; a key gpg will not use fails loudly."""

from __future__ import annotations

import pytest

from maskmail.openpgp import EncryptionFailed, check_key, gpg
from tests.pgp_keys import keys


def test_encrypts_to_the_key_and_decrypts_with_its_private_half() -> None:
    facts = check_key(keys().good)
    assert facts.fingerprint == keys().good_fingerprint
    data = bytes(range(256)) * 4000
    armored = gpg().encrypt(data, keys().good, facts.fingerprint)
    assert armored.startswith(b"-----BEGIN PGP MESSAGE-----")
    assert keys().decrypt(armored) == data
    # Imported once; a second message reuses the keyring.
    assert keys().decrypt(gpg().encrypt(b"again", keys().good, facts.fingerprint)) == b"again"


def test_an_expired_key_fails_rather_than_encrypting_to_nothing() -> None:
    [found] = keys().gpg.scan_keys_mem(keys().expired)
    with pytest.raises(EncryptionFailed) as failed:
        gpg().encrypt(b"secret", keys().expired, str(found["fingerprint"]))
    assert failed.value.reason


def test_a_fingerprint_the_key_does_not_have_fails() -> None:
    with pytest.raises(EncryptionFailed):
        gpg().encrypt(b"secret", keys().good, "0" * 40)
