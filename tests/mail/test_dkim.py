"""DKIM: `maskmail dkim generate` makes a key and record; forwards verify against it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import dkim
import pytest
from aiosmtplib.protocol import normalize_message_line_endings

from maskmail.mail.dkim import Signer, dns_record, generate_key, txt_value
from tests.mail.conftest import DOMAIN, Masks, Sink, message, send_async
from tests.support import run_cli

NESTED = Path(__file__).with_name("fixtures") / "nested.eml"


def record_from_zone_line(line: str) -> bytes:
    """What a resolver returns for the zone line: the strings joined."""
    return "".join(re.findall(r'"([^"]*)"', line)).encode()


@pytest.mark.slow
def test_generate_writes_a_private_key_and_prints_the_record(tmp_path: Path) -> None:
    env = {"MASKMAIL_DATA_DIR": str(tmp_path), "MASKMAIL_DOMAIN": DOMAIN}
    made = run_cli(env, "dkim", "generate")
    assert made.returncode == 0, made.stderr
    line = made.stdout.strip()
    assert line.startswith(f"maskmail._domainkey.{DOMAIN}. IN TXT")
    assert all(len(s) <= 255 for s in re.findall(r'"([^"]*)"', line))
    assert record_from_zone_line(line).startswith(b"v=DKIM1; k=rsa; p=MII")
    key = tmp_path / "dkim.key"
    assert key.read_bytes().startswith(b"-----BEGIN RSA PRIVATE KEY-----")
    assert key.stat().st_mode & 0o077 == 0
    again = run_cli(env, "dkim", "generate")
    assert again.returncode != 0
    assert "already exists" in again.stderr
    assert key.read_bytes().startswith(b"-----BEGIN RSA PRIVATE KEY-----")


def test_signature_verifies_and_breaks_when_the_body_changes() -> None:
    private, public = generate_key()
    signer = Signer(private, selector="s1", domain=DOMAIN)
    signed = signer._sign(NESTED.read_bytes())

    def dns(name: bytes, timeout: int = 5) -> bytes:
        assert name == f"s1._domainkey.{DOMAIN}.".encode()
        return txt_value(public).encode()

    assert dkim.verify(signed, dnsfunc=dns)
    assert not dkim.verify(signed.replace(b"Gr\xc3\xbc\xc3\x9fe aus", b"Hallo aus"), dnsfunc=dns)
    assert dns_record(public, selector="s1", domain=DOMAIN).startswith("s1._domainkey.")


@pytest.mark.anyio
async def test_forwards_are_signed_with_the_relay_domain(
    signing_relay: tuple[int, bytes], sink: Sink, masks: Masks
) -> None:
    port, public = signing_relay
    mask = await masks.make()
    await send_async(port, "alice@example.com", [mask.address], message(to=mask.address))
    [got] = sink.messages
    assert got.data.startswith(b"DKIM-Signature: ")
    assert f"d={DOMAIN};".encode() in got.data
    assert dkim.verify(got.data, dnsfunc=lambda name, timeout=5: txt_value(public).encode())


# A body line ended by a bare CR, one by a bare LF, and both the wrong way round: each
# reaches the smarthost as CRLF (aiosmtplib sends every line ending so).
STRAY_ENDINGS = [b"one\rtwo\r\n", b"one\ntwo\r\n", b"one\n\rtwo \r\n"]


def dns_for(public: bytes) -> Callable[..., bytes]:
    return lambda name, timeout=5: txt_value(public).encode()


@pytest.mark.parametrize("body", STRAY_ENDINGS)
def test_what_is_signed_verifies_as_sent(body: bytes) -> None:
    """Every caller (forwards, replies, notices) signs through Signer: the bytes it
    returns verify once aiosmtplib has made their line endings CRLF."""
    private, public = generate_key()
    signer = Signer(private, selector="maskmail", domain=DOMAIN)
    signed = signer._sign(b"From: b@relay.test\r\nSubject: x\r\n\r\n" + body)
    assert dkim.verify(normalize_message_line_endings(signed), dnsfunc=dns_for(public))


@pytest.mark.anyio
@pytest.mark.parametrize("body", STRAY_ENDINGS)
async def test_a_forward_with_stray_line_endings_verifies_at_the_smarthost(
    signing_relay: tuple[int, bytes], sink: Sink, masks: Masks, body: bytes
) -> None:
    port, public = signing_relay
    mask = await masks.make()
    # smtplib sends bytes as given: the relay receives the stray CR or LF.
    raw = message(to=mask.address).replace(b"Hello there.\r\n", body)
    await send_async(port, "alice@example.com", [mask.address], raw)
    [got] = sink.messages
    assert b"one\r\n" in got.data
    assert dkim.verify(got.data, dnsfunc=dns_for(public))
