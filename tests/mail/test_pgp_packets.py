"""OpenPGP data read as packets: every header form, partial bodies joined, compressed
packets inflated within bounds, encrypted ones skipped, and anything else refused."""

from __future__ import annotations

import base64
import bz2
import time
import zlib

import pytest

from maskmail.core.errors import Unrewritable
from maskmail.mail import pgp_packets
from tests.pgp_keys import NEEDS_GPG, key_of, signed_by

UID = b"Alice <alice@example.com>"


def _new(tag: int, body: bytes) -> bytes:
    """A new-format packet with a five-octet length."""
    return bytes([0xC0 | tag, 255]) + len(body).to_bytes(4, "big") + body


def _old(tag: int, body: bytes, size: int) -> bytes:
    kind = {1: 0, 2: 1, 4: 2}[size]
    return bytes([0x80 | tag << 2 | kind]) + len(body).to_bytes(size, "big") + body


def _armor(data: bytes, kind: str = "PUBLIC KEY BLOCK", prefix: str = "") -> str:
    lines = [f"-----BEGIN PGP {kind}-----", "Comment: made by hand", ""]
    lines += base64.encodebytes(data).decode().split()
    lines += ["=AAAA", f"-----END PGP {kind}-----"]
    return "\n".join(prefix + line for line in lines) + "\n"


@pytest.mark.parametrize(
    "data",
    [
        _new(13, UID),
        _old(13, UID, 1),
        _old(13, UID, 2),
        _old(13, UID, 4),
        bytes([0x80 | 13 << 2 | 3]) + UID,  # old format, running to the end
        bytes([0xC0 | 13, len(UID)]) + UID,  # one-octet length
    ],
)
def test_every_header_form_is_read(data: bytes) -> None:
    assert pgp_packets.readable(data) == [UID]


def test_a_two_octet_length_is_read() -> None:
    body = UID.ljust(700, b" ")
    length = len(body) - 192
    data = bytes([0xC0 | 13, (length >> 8) + 192, length & 0xFF]) + body + _new(13, b"next")
    assert pgp_packets.readable(data) == [body, b"next"]


def test_partial_bodies_are_joined() -> None:
    """A literal packet streamed in partial chunks: the address split between two."""
    body = b"b\x00\x00\x00\x00\x00" + b"x" * 10 + b"write to alice@example.com"
    first = body[:16]
    data = bytes([0xC0 | 11, 0xE0 | 4]) + first + bytes([len(body) - 16]) + body[16:]
    assert pgp_packets.readable(data) == [body]


@pytest.mark.parametrize(
    "compress",
    [
        lambda data: b"\x00" + data,
        lambda data: b"\x01" + zlib.compress(data)[2:-4],  # raw deflate
        lambda data: b"\x02" + zlib.compress(data),
        lambda data: b"\x03" + bz2.compress(data),
    ],
)
def test_compressed_packets_are_inflated_and_read(compress: object) -> None:
    assert callable(compress)
    inner = _new(13, UID)
    assert pgp_packets.readable(_new(8, compress(inner))) == [UID]


def test_encrypted_data_is_skipped() -> None:
    data = _new(1, b"\x03" + b"k" * 8) + _new(18, b"\x01" + UID)
    assert pgp_packets.readable(data) == [b"\x03" + b"k" * 8]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"hello",  # no packet starts with a byte under 0x80
        bytes([0xC0 | 13, 50]) + UID,  # the length runs past the end
        bytes([0xC0 | 13, 255, 0, 0]),  # the length itself does
        _new(0, UID),  # the reserved tag
        _new(8, b"\x09" + UID),  # an unknown compression algorithm
        _new(8, b"\x02not zlib at all"),
        _new(8, b""),
    ],
)
def test_what_is_not_packets_is_refused(data: bytes) -> None:
    with pytest.raises(Unrewritable):
        pgp_packets.readable(data)


def test_inflating_is_bounded() -> None:
    """A small packet that inflates past the bound is refused, not read into memory."""
    bomb = _new(8, b"\x02" + zlib.compress(b"\x00" * (pgp_packets.MAX_INFLATED + 1), 9))
    assert len(bomb) < pgp_packets.MAX_INFLATED // 500
    with pytest.raises(Unrewritable):
        pgp_packets.readable(bomb)


def test_nesting_is_bounded() -> None:
    data = _new(13, UID)
    for _ in range(9):
        assert pgp_packets.readable(data)
        data = _new(8, b"\x00" + data)
    with pytest.raises(Unrewritable):
        pgp_packets.readable(data)


@pytest.mark.parametrize("prefix", ["", "> ", ">> ", "- "])
def test_armor_is_read_with_its_prefix(prefix: str) -> None:
    assert pgp_packets.armored("text before\n" + _armor(_new(13, UID), prefix=prefix)) == [UID]


def test_armor_that_is_not_base64_is_refused() -> None:
    text = "-----BEGIN PGP SIGNATURE-----\n\nnot base64 !\n-----END PGP SIGNATURE-----\n"
    with pytest.raises(Unrewritable):
        pgp_packets.armored(text)


@NEEDS_GPG
def test_real_keys_and_signatures() -> None:
    """What gpg writes: a key's user id, and the signer's user id in a clear-signed
    text's signature (the signed text itself, with no END line, is no block)."""
    assert b"Owner <owner@example.net>" in pgp_packets.armored(key_of("Owner <owner@example.net>"))
    signed = signed_by("Owner <owner@example.net>", b"hello\n", clearsign=True)
    assert any(b"owner@example.net" in body for body in pgp_packets.armored(signed))


def test_many_begin_lines_take_linear_time() -> None:
    """Each BEGIN line with no END is passed over once, not searched to the end."""
    text = "".join(f"-----BEGIN PGP MESSAGE {i}-----\n" for i in range(100_000))
    started = time.monotonic()
    assert pgp_packets.armored(text + _armor(_new(13, UID))) == [UID]
    assert time.monotonic() - started < 10


def test_one_message_shares_one_bound() -> None:
    """Blocks that each inflate to over half the bound: one passes alone, two in one
    message are refused; the same block met twice (two readings of one body) counts once."""
    half = pgp_packets.MAX_INFLATED // 2 + 1
    blocks = [
        _armor(_new(8, b"\x02" + zlib.compress(_new(11, bytes([i]) * half), 9)), "MESSAGE")
        for i in range(2)
    ]
    reader = pgp_packets.Reader()
    assert len(reader.armored(blocks[0])) == 1
    assert reader.armored(blocks[0]) == []
    with pytest.raises(Unrewritable):
        reader.armored(blocks[1])
    assert len(pgp_packets.armored(blocks[1])) == 1
