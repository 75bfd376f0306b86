"""Replies from a mailbox with an OpenPGP key: handled as any reply; one the owner
encrypted to the outside recipient passes with its ciphertext untouched, its outer
headers rewritten as usual (docs/security.md says what scrubbing cannot see inside)."""

from __future__ import annotations

from email import message_from_bytes, policy
from email.message import EmailMessage

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.mail.rewrite import split_message
from tests.mail.conftest import Masks, Sink, send_async
from tests.mail.test_pgp_forward import _key
from tests.mail.test_replies import OUTSIDE, _alias
from tests.pgp_keys import NEEDS_GPG, keys

pytestmark = [pytest.mark.anyio, NEEDS_GPG]

SECRET = b"Meet at noon. -- the owner\r\n"


def _armored() -> str:
    """A message to the outside recipient's key (the test key stands in for theirs)."""
    result = keys().gpg.encrypt(SECRET, keys().good_fingerprint, always_trust=True)
    return str(result).replace("\r\n", "\n").replace("\n", "\r\n")


def _headers(owner: str, alias: str, content: str) -> str:
    return (
        f"From: Owner Person <{owner}>\r\nTo: {alias}\r\nCc: {owner}\r\n"
        f"Subject: Re: hello\r\nMessage-ID: <enc-1@mail.example.net>\r\n"
        f"Autocrypt: addr={owner}; keydata=AAAA\r\nMIME-Version: 1.0\r\n{content}\r\n"
    )


def pgp_mime(owner: str, alias: str, armored: str) -> bytes:
    content = (
        'Content-Type: multipart/encrypted; protocol="application/pgp-encrypted"; boundary="b1"'
    )
    return (
        _headers(owner, alias, content)
        + "\r\n--b1\r\nContent-Type: application/pgp-encrypted\r\n\r\nVersion: 1\r\n"
        '\r\n--b1\r\nContent-Type: application/octet-stream; name="encrypted.asc"\r\n'
        f"\r\n{armored}\r\n--b1--\r\n"
    ).encode()


def inline(owner: str, alias: str, armored: str) -> bytes:
    content = "Content-Type: text/plain; charset=us-ascii"
    return (_headers(owner, alias, content) + "\r\n" + armored).encode()


@pytest.mark.parametrize("shape", [pgp_mime, inline])
async def test_an_encrypted_reply_passes_untouched(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine, shape: object
) -> None:
    assert callable(shape)
    mask = await masks.make()
    # The owner's mailbox has a key: the forward is encrypted, its outer Reply-To is not.
    await _key(relay_engine, mask, keys().good)
    alias, forwarded = await _alias(relay, sink, mask)
    assert forwarded.get_content_type() == "multipart/encrypted"
    armored = _armored()
    sent = shape(mask.owner, alias, armored)
    assert await send_async(relay, mask.owner, [alias], sent) == {}
    got = sink.messages[-1]
    assert got.rcpt_tos == [OUTSIDE]
    assert mask.owner.split("@")[0].encode() not in got.data.lower()
    parsed = message_from_bytes(got.data, policy=policy.default)
    assert isinstance(parsed, EmailMessage)
    assert str(parsed["From"]) == mask.address
    assert parsed["Cc"] is None and parsed["Autocrypt"] is None
    assert parsed.get_content_type() == message_from_bytes(sent).get_content_type()
    # The ciphertext is the one the owner sent, line for line, and still decrypts.
    assert armored.encode() in split_message(got.data)[1]
    assert keys().decrypt(armored.encode()) == SECRET


async def test_a_plain_reply_from_a_keyed_mailbox_is_scrubbed_as_ever(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    await _key(relay_engine, mask, keys().good)
    alias, _ = await _alias(relay, sink, mask)
    sent = (
        _headers(mask.owner, alias, "Content-Type: text/plain")
        + f"\r\nThanks! -- write to {mask.owner}\r\n"
    ).encode()
    assert await send_async(relay, mask.owner, [alias], sent) == {}
    got = sink.messages[-1].data
    assert mask.owner.encode() not in got
    assert f"write to {mask.address}".encode() in got
