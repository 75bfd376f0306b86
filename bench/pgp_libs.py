"""Which OpenPGP library encrypts forwards: pgpy or python-gnupg (with the gpg binary).

    .tools/bin/uv run --with pgpy python -m bench.pgp_libs [--runs 20] [--size 1000000]

Encrypts one message of ``--size`` bytes (a text part and a base64 attachment of random
bytes, as a forwarded message with an attachment looks) to one RSA-3072 key, ``--runs``
times with each library, and prints the median and mean wall time per message. pgpy is
not a dependency of maskmail: without it installed, only python-gnupg is measured.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from email.message import EmailMessage
from typing import Any

import gnupg


def message(size: int) -> bytes:
    mail = EmailMessage()
    mail["Subject"] = "a large message"
    mail.set_content("Hello,\n\nthe file is attached.\n")
    attachment = os.urandom(size * 3 // 4)
    mail.add_attachment(attachment, maintype="application", subtype="octet-stream")
    return mail.as_bytes()


def _time(runs: int, encrypt: Callable[[bytes], bytes], data: bytes) -> list[float]:
    encrypt(data)  # warm up: imports, first process start, caches
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        out = encrypt(data)
        times.append(time.perf_counter() - started)
        assert out.startswith(b"-----BEGIN PGP MESSAGE-----")
    return times


def with_gnupg(home: str) -> tuple[str, Callable[[bytes], bytes]]:
    gpg = gnupg.GPG(gnupghome=home)
    params = gpg.gen_key_input(
        key_type="RSA", key_length=3072, name_email="bench@example.org", no_protection=True
    )
    fingerprint = str(gpg.gen_key(params).fingerprint)

    def encrypt(data: bytes) -> bytes:
        result = gpg.encrypt(data, [fingerprint], always_trust=True, armor=True)
        assert result.ok, result.status
        return bytes(result.data)

    return "python-gnupg " + gnupg.__version__ + " (gpg " + ".".join(
        map(str, gpg.version)
    ) + ")", encrypt


def with_pgpy() -> tuple[str, Callable[[bytes], bytes]] | None:
    try:
        import pgpy  # type: ignore[import-not-found, unused-ignore]
        from pgpy.constants import (  # type: ignore[import-not-found, unused-ignore]
            CompressionAlgorithm,
            HashAlgorithm,
            KeyFlags,
            PubKeyAlgorithm,
            SymmetricKeyAlgorithm,
        )
    except ImportError:
        return None
    key: Any = pgpy.PGPKey.new(PubKeyAlgorithm.RSAEncryptOrSign, 3072)
    key.add_uid(
        pgpy.PGPUID.new("bench", email="bench@example.org"),
        usage={KeyFlags.Sign, KeyFlags.EncryptCommunications},
        hashes=[HashAlgorithm.SHA256],
        ciphers=[SymmetricKeyAlgorithm.AES256],
        compression=[CompressionAlgorithm.ZLIB],
    )
    public = key.pubkey

    def encrypt(data: bytes) -> bytes:
        return str(public.encrypt(pgpy.PGPMessage.new(data))).encode("ascii")

    return "pgpy (unversioned module; installed 0.6.0)", encrypt


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--size", type=int, default=1_000_000)
    args = p.parse_args()
    data = message(args.size)
    print(f"message: {len(data)} bytes, {args.runs} runs each")
    with tempfile.TemporaryDirectory() as home:
        ways = [with_gnupg(home), with_pgpy()]
        for way in ways:
            if way is None:
                print("pgpy: not installed (run with `uv run --with pgpy`)")
                continue
            name, encrypt = way
            times = _time(args.runs, encrypt, data)
            print(
                f"{name}: median {statistics.median(times) * 1000:.1f} ms, "
                f"mean {statistics.fmean(times) * 1000:.1f} ms per message"
            )


if __name__ == "__main__":
    main()
