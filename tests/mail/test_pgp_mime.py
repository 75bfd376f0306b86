"""mail/pgp_mime: what counts as encrypted already, and the inner entity's exact bytes."""

from __future__ import annotations

from maskmail.mail.pgp_mime import already_encrypted, encrypt_forward, inner_entity

ARMOR = b"-----BEGIN PGP MESSAGE-----\r\n\r\nhQEMA\r\n-----END PGP MESSAGE-----\r\n"


def test_what_counts_as_already_encrypted() -> None:
    pgp = 'multipart/encrypted; protocol="application/pgp-encrypted"; boundary="b"'
    assert already_encrypted([("Content-Type", pgp)], b"--b--\r\n")
    smime = 'multipart/encrypted; protocol="application/pkcs7-mime"; boundary="b"'
    assert not already_encrypted([("Content-Type", smime)], b"--b--\r\n")
    assert already_encrypted([("Content-Type", "text/plain")], b"\r\n" + ARMOR)
    assert already_encrypted([], ARMOR)
    # A PGP block among plain text, or as one part of several, is not the whole message.
    assert not already_encrypted([], b"Hello,\r\n" + ARMOR)
    mixed = [("Content-Type", 'multipart/mixed; boundary="b"')]
    assert not already_encrypted(mixed, ARMOR)


def test_the_inner_entity_without_a_content_type() -> None:
    fields = [("Subject", "hi"), ("From", "a@example.com")]
    assert inner_entity(fields, b"body\r\n", protect_subject=False) == b"\r\nbody\r\n"
    assert inner_entity(fields, b"body\r\n", protect_subject=True) == (
        b"Subject: hi\r\n"
        b'Content-Type: text/plain; charset=us-ascii; protected-headers="v1"\r\n'
        b"\r\nbody\r\n"
    )


def test_the_envelope_drops_the_original_content_fields() -> None:
    message = (
        b"From: a@example.com\r\nSubject: hi\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n"
        b"\r\nbody\r\n"
    )
    seen: list[bytes] = []

    def encrypt(inner: bytes) -> bytes:
        seen.append(inner)
        return b"-----BEGIN PGP MESSAGE-----\nx\n-----END PGP MESSAGE-----\n"

    out = encrypt_forward(message, encrypt, protect_subject=True)
    head, _, body = out.partition(b"\r\n\r\n")
    assert b"charset=utf-8" not in head and b"8bit" not in head
    assert b"Subject: ...\r\n" in head and b"Subject: hi" not in head
    assert head.count(b"MIME-Version") == 1
    assert seen == [
        b"Subject: hi\r\nContent-Type: text/plain; charset=utf-8; "
        b'protected-headers="v1"\r\nContent-Transfer-Encoding: 8bit\r\n\r\nbody\r\n'
    ]
    assert b"\r\n-----BEGIN PGP MESSAGE-----\r\nx\r\n-----END PGP MESSAGE-----\r\n--" in body
