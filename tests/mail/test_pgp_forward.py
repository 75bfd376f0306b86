"""Forwards to a mailbox with an OpenPGP key, over real SMTP: PGP/MIME (RFC 3156) whose
decrypted inner entity is the original's MIME entity byte for byte; the subject hidden
on request; encrypted mail passed on as it is; a key that fails defers, never leaks, and
tells the owner once; an encryption that hangs defers, and the session goes on."""

from __future__ import annotations

import asyncio
import smtplib
import time
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path

import dkim
import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.core.mailboxes import new_proof
from maskmail.mail import encryption
from maskmail.mail.dkim import txt_value
from maskmail.mail.plane import mail_plane
from maskmail.mail.rewrite import split_message
from maskmail.openpgp import check_key
from maskmail.store import mailbox_keys, mailboxes
from maskmail.store.engine import transaction
from maskmail.store.tables import mailbox_keys as keys_table
from tests.mail.conftest import DOMAIN, HOST, Mask, Masks, Sink, mail_settings, message, send_async
from tests.pgp_keys import NEEDS_GPG, hung, keys
from tests.support import free_port

pytestmark = [pytest.mark.anyio, NEEDS_GPG]

SENDER = "alice@example.com"


def original(to: str, subject: str = "the plans") -> bytes:
    """A multipart message with an attachment, as a client writes it (CRLF)."""
    mail = EmailMessage()
    mail["From"] = f"Alice <{SENDER}>"
    mail["To"] = to
    mail["Subject"] = subject
    mail["Message-ID"] = "<plans@example.com>"
    mail.set_content("Hello,\n\nthe plans are attached. Grüße!\n")
    mail.add_attachment(bytes(range(256)) * 40, maintype="application", subtype="pdf",
                        filename="plans.pdf")  # fmt: skip
    return mail.as_bytes(policy=policy.default.clone(linesep="\r\n"))


def mime_entity(raw: bytes, *, subject: bytes = b"") -> bytes:
    """The original's MIME entity, as the design defines it (mail/pgp_mime.py): its
    Content-* fields in order, as written, then the blank line and the body as sent."""
    header_block, body = split_message(raw)
    lines = header_block.split(b"\r\n")
    fields: list[bytes] = []
    for one in lines:
        if one[:1] in (b" ", b"\t") and fields:
            fields[-1] += b"\r\n" + one
        elif one:
            fields.append(one)
    content = [f + b"\r\n" for f in fields if f.lower().startswith(b"content-")]
    return subject + b"".join(content) + b"\r\n" + body


async def _key(
    engine: AsyncEngine, mask: Mask, armored: str, *, subject: bool = False, mailbox: int = 0
) -> int:
    async with transaction(engine) as conn:
        if not mailbox:
            mailbox = (await mailboxes.list_mailboxes(conn, mask.user_id))[0].id
        await mailbox_keys.set_key(
            conn, mask.user_id, mailbox, armored, check_key(armored), subject
        )
    return mailbox


def _parts(data: bytes, *, in_process: bool = False) -> tuple[EmailMessage, bytes]:
    """The forward as parsed, and the inner entity, decrypted by gpg (or Sequoia)."""
    outer = message_from_bytes(data, policy=policy.default)
    assert isinstance(outer, EmailMessage)
    assert outer.get_content_type() == "multipart/encrypted"
    assert outer.get_param("protocol") == "application/pgp-encrypted"
    version, payload = outer.iter_parts()
    assert version.get_content_type() == "application/pgp-encrypted"
    assert version.get_content().strip() == b"Version: 1"
    assert payload.get_content_type() == "application/octet-stream"
    armored = payload.get_payload(decode=True)
    assert isinstance(armored, bytes) and armored.startswith(b"-----BEGIN PGP MESSAGE-----")
    return outer, (keys().decrypt_in_process if in_process else keys().decrypt)(armored)


async def test_the_forward_is_pgp_mime_and_decrypts_to_the_original_entity(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    await _key(relay_engine, mask, keys().good)
    sent = original(mask.address)
    await send_async(relay, SENDER, [mask.address], sent)
    [got] = sink.messages
    assert got.rcpt_tos == [mask.owner]
    outer, inner = _parts(got.data)
    assert inner == mime_entity(sent)
    assert _parts(got.data, in_process=True)[1] == inner
    assert b"plans.pdf" in inner and b"plans.pdf" not in got.data
    # The outer fields are the forward's, rewritten as ever.
    assert outer["Subject"] == "the plans"
    assert mask.address in str(outer["From"])
    assert "Reply-To" in outer
    assert b"Hello," not in got.data and SENDER.encode() in got.data  # the From display


async def test_an_encrypted_subject_travels_inside(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    await _key(relay_engine, mask, keys().good, subject=True)
    sent = original(mask.address, subject="secret plans")
    await send_async(relay, SENDER, [mask.address], sent)
    [got] = sink.messages
    outer, inner = _parts(got.data)
    assert outer["Subject"] == "..."
    assert b"secret plans" not in got.data
    head, _, body = inner.partition(b"\r\n\r\n")
    assert head.startswith(b"Subject: secret plans\r\n")
    parsed = message_from_bytes(inner, policy=policy.default)
    assert parsed.get_param("protected-headers") == "v1"
    assert parsed.get_content_type() == "multipart/mixed"
    assert body == split_message(sent)[1]


async def test_encrypted_mail_is_forwarded_as_it_is(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    await _key(relay_engine, mask, keys().good, subject=True)
    armored = str(keys().gpg.encrypt(b"already secret", keys().good_fingerprint,
                                     always_trust=True)).replace("\n", "\r\n")  # fmt: skip
    pgp_mime = (
        'Content-Type: multipart/encrypted; protocol="application/pgp-encrypted";'
        ' boundary="b1"\r\nMIME-Version: 1.0\r\n\r\n--b1\r\nContent-Type: '
        "application/pgp-encrypted\r\n\r\nVersion: 1\r\n\r\n--b1\r\nContent-Type: "
        f"application/octet-stream\r\n\r\n{armored}\r\n--b1--\r\n"
    )
    for extra, body in ((pgp_mime, ""), ("", armored)):
        sent = message(to=mask.address, subject="kept", extra=extra).replace(
            b"\r\nHello there.\r\n", f"\r\n{body}".encode() if body else b""
        )
        await send_async(relay, SENDER, [mask.address], sent)
        got = sink.messages[-1].data
        assert split_message(got)[1] == split_message(sent)[1]
        assert message_from_bytes(got, policy=policy.default)["Subject"] == "kept"
    assert len(sink.messages) == 2


async def test_only_the_mailbox_with_a_key_gets_ciphertext(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    async with transaction(relay_engine) as conn:
        proof = new_proof()
        work = await mailboxes.add_mailbox(conn, mask.user_id, "work@example.net", proof, limit=5)
        await mailboxes.verify_by_token(conn, proof.token_hash)
        one = (await mailboxes.list_mailboxes(conn, mask.user_id))[0].id
        await mailboxes.set_address_mailboxes(conn, mask.user_id, mask.address_id, [one, work.id])
    await _key(relay_engine, mask, keys().good, mailbox=work.id)
    sent = original(mask.address)
    await send_async(relay, SENDER, [mask.address], sent)
    got = {m.rcpt_tos[0]: m.data for m in sink.messages}
    assert set(got) == {mask.owner, "work@example.net"}
    assert split_message(got[mask.owner])[1] == split_message(sent)[1]
    assert _parts(got["work@example.net"])[1] == mime_entity(sent)


async def test_a_failing_key_defers_and_tells_the_owner_once(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    mailbox = await _key(relay_engine, mask, keys().good)
    # The key went bad after it was checked (it expired, say).
    async with transaction(relay_engine) as conn:
        await conn.execute(
            update(keys_table)
            .where(keys_table.c.mailbox_id == mailbox)
            .values(public_key=keys().expired, fingerprint=check_expired_fingerprint())
        )
    sent = original(mask.address, subject="never in plain text")
    for _ in range(3):
        with pytest.raises(smtplib.SMTPDataError) as refused:
            await send_async(relay, SENDER, [mask.address], sent)
        assert refused.value.smtp_code == 451
    [notice] = sink.messages
    assert notice.rcpt_tos == [mask.owner]
    assert notice.mail_from == "<>"
    assert b"never in plain text" not in notice.data and b"plans" not in notice.data
    text = message_from_bytes(notice.data, policy=policy.default)
    assert f"/v3/relay/mailboxes/{mailbox}/pgp" in text.get_body().get_content()  # type: ignore[union-attr]
    # A good key again: the retry goes out encrypted.
    await _key(relay_engine, mask, keys().good)
    await send_async(relay, SENDER, [mask.address], sent)
    assert _parts(sink.messages[-1].data)[1] == mime_entity(sent)


def check_expired_fingerprint() -> str:
    [found] = keys().gpg.scan_keys_mem(keys().expired)
    return str(found["fingerprint"])


async def test_the_dkim_signature_covers_the_encrypted_forward(
    signing_relay: tuple[int, bytes], sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    port, public = signing_relay
    mask = await masks.make()
    await _key(relay_engine, mask, keys().good)
    await send_async(port, SENDER, [mask.address], original(mask.address))
    [got] = sink.messages

    def dns(name: bytes, timeout: int = 5) -> bytes:
        assert name == f"maskmail._domainkey.{DOMAIN}.".encode()
        return txt_value(public).encode()

    assert got.data.startswith(b"DKIM-Signature:")
    assert dkim.verify(got.data, dnsfunc=dns)
    _parts(got.data)


async def test_an_rsa_key_works_as_well(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    await _key(relay_engine, mask, keys().rsa)
    sent = original(mask.address)
    await send_async(relay, SENDER, [mask.address], sent)
    [got] = sink.messages
    assert _parts(got.data)[1] == mime_entity(sent)


def _send_then_noop(port: int, to: str, data: bytes) -> tuple[int, float, int]:
    """The DATA reply's code and how long it took, then NOOP's code on the same session."""
    with smtplib.SMTP(HOST, port, timeout=60) as client:
        started = time.monotonic()
        try:
            client.sendmail(SENDER, [to], data)
            code = 250
        except smtplib.SMTPDataError as exc:
            code = exc.smtp_code
        waited = time.monotonic() - started
        return code, waited, client.noop()[0]


async def test_an_encryption_that_hangs_defers_within_the_timeout(
    database_url: str,
    tmp_path: Path,
    sink: Sink,
    masks: Masks,
    relay_engine: AsyncEngine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = mail_settings(
        database_url, tmp_path, smarthost=f"{HOST}:{sink.port}", pgp_timeout=0.5
    )
    mask = await masks.make()
    await _key(relay_engine, mask, keys().good)
    port = free_port()
    with hung() as (work, entered):
        monkeypatch.setattr(encryption, "encrypt", work)
        async with mail_plane(settings, relay_engine, host=HOST, port=port):
            code, waited, noop = await asyncio.to_thread(
                _send_then_noop, port, mask.address, original(mask.address)
            )
    assert entered.is_set()
    assert (code, noop) == (451, 250)
    assert 0.5 <= waited < 30
    # Nothing went out, and the owner is not told: the key is not at fault.
    assert sink.messages == []
