"""Which OpenPGP library encrypts forwards: the in-process ones on PyPI against
python-gnupg (a gpg process per message, what maskmail ran before).

    .tools/bin/uv run --with johnnycanencrypt --with rpgp-py --with pgpy==0.6.0 \\
        python -m bench.pgp_libs [--runs 200] [--size 10240] [--seconds 10]

For each kind of key (RSA-3072, RSA-4096, Ed25519 with a Cv25519 subkey; made by gpg, as
most people's keys are), each library encrypts one message of ``--size`` bytes (a text
part and a base64 attachment, as bench.mail's load sends) ``--runs`` times, or for
``--seconds`` if that comes first, after a warm-up. One output of each is decrypted by
Sequoia with the secret key, so every row is a real OpenPGP message. Then each checks a
pasted key: maskmail's whole check (openpgp.check_key), python-gnupg's scan of the key
(the one gpg process maskmail's check ran), and the other libraries' parse.

CPU counts this process and its finished children (each gpg). Libraries not installed
(only pysequoia and python-gnupg are maskmail's) are named and left out. Prints
markdown tables; docs/benchmarks.md ("PGP") keeps one.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage
from functools import partial
from importlib import metadata
from typing import Any

import gnupg
import pysequoia

from maskmail import openpgp

Encrypt = Callable[[bytes], bytes]
KINDS = {  # label: (primary key, encryption subkey), as gpg names them
    "RSA-3072": ("rsa3072", "rsa3072"),
    "RSA-4096": ("rsa4096", "rsa4096"),
    "Ed25519/Cv25519": ("ed25519", "cv25519"),
}


@dataclass(frozen=True)
class Key:
    kind: str
    fingerprint: str
    public: str
    secret: str


@dataclass(frozen=True)
class Library:
    """One way to encrypt: ``prepare(key)`` does the once-per-key work (an import, a
    parse) and gives the per-message function; ``check(armored)`` reads a pasted key."""

    name: str
    prepare: Callable[[Key], Encrypt]
    check: Callable[[str], object]


def message(size: int) -> bytes:
    mail = EmailMessage()
    mail["Subject"] = "the plans"
    mail.set_content("Hello,\n\nthe file is attached.\n")
    mail.add_attachment(os.urandom(size * 3 // 4), maintype="application", subtype="pdf")
    return mail.as_bytes()


def make_keys(gpg: gnupg.GPG) -> list[Key]:
    made = []
    for kind, (primary, sub) in KINDS.items():
        uid = f"{kind} <bench@example.org>"
        run = [gpg.gpgbinary, "--homedir", gpg.gnupghome, "--batch", "--passphrase", ""]
        subprocess.run(
            [*run, "--quick-gen-key", uid, primary, "sign,cert", "1y"],
            check=True,
            capture_output=True,
        )
        [listed] = [k for k in gpg.list_keys() if uid in k["uids"]]
        fingerprint = str(listed["fingerprint"])
        subprocess.run(
            [*run, "--quick-add-key", fingerprint, sub, "encr", "1y"],
            check=True,
            capture_output=True,
        )
        public = str(gpg.export_keys(fingerprint))
        secret = str(gpg.export_keys(fingerprint, secret=True, passphrase=""))
        made.append(Key(kind, fingerprint, public, secret))
    return made


def _version(distribution: str) -> str:
    return f"{distribution} {metadata.version(distribution)}"


def gnupg_library(gpg: gnupg.GPG) -> Library:
    def prepare(key: Key) -> Encrypt:
        def encrypt(data: bytes) -> bytes:
            result = gpg.encrypt(data, [key.fingerprint], always_trust=True, armor=True)
            assert result.ok, result.status
            return bytes(result.data)

        return encrypt

    gpg_version = ".".join(map(str, gpg.version))
    return Library(f"{_version('python-gnupg')} (gpg {gpg_version})", prepare, gpg.scan_keys_mem)


def maskmail_library() -> Library:
    def prepare(key: Key) -> Encrypt:
        fingerprint = openpgp.check_key(key.public).fingerprint
        return lambda data: openpgp.encrypt(data, key.public, fingerprint)

    def check(armored: str) -> object:
        openpgp._parse.cache_clear()  # each check reads the key afresh
        return openpgp.check_key(armored)

    return Library(f"{_version('pysequoia')} (maskmail's openpgp.py)", prepare, check)


def other_libraries() -> tuple[list[Library], list[str]]:
    """The in-process libraries that are not maskmail's, where installed."""
    found: list[Library] = []
    missing: list[str] = []
    try:
        import johnnycanencrypt.johnnycanencrypt as jce  # type: ignore[import-not-found, unused-ignore]

        def jce_prepare(key: Key) -> Encrypt:
            public = key.public.encode()
            return lambda data: bytes(jce.encrypt_bytes_to_bytes([public], data, True))

        found.append(
            Library(
                _version("johnnycanencrypt"),
                jce_prepare,
                lambda armored: jce.parse_cert_bytes(armored.encode()),
            )
        )
    except ImportError:
        missing.append("johnnycanencrypt")
    try:
        from openpgp.composed import (  # type: ignore[import-not-found, unused-ignore]
            MessageBuilder,
            SignedPublicKey,
        )

        def rpgp_read(armored: str) -> Any:
            public, _ = SignedPublicKey.from_armor(armored)
            public.verify_bindings()
            return public

        def rpgp_prepare(key: Key) -> Encrypt:
            # The caller picks the encryption subkey: rPGP checks no flags or expiry.
            subkey = rpgp_read(key.public).public_subkeys[-1]

            def encrypt(data: bytes) -> bytes:
                built = MessageBuilder.from_bytes("", data).seipd_v1("aes256")
                return str(built.encrypt_to_key(subkey).to_armored_string()).encode()

            return encrypt

        found.append(Library(_version("rpgp-py"), rpgp_prepare, rpgp_read))
    except ImportError:
        missing.append("rpgp-py")
    try:
        import pgpy  # type: ignore[import-not-found, unused-ignore]

        def pgpy_prepare(key: Key) -> Encrypt:
            public, _ = pgpy.PGPKey.from_blob(key.public)
            return lambda data: str(public.encrypt(pgpy.PGPMessage.new(data))).encode()

        found.append(
            Library(_version("pgpy"), pgpy_prepare, lambda armored: pgpy.PGPKey.from_blob(armored))
        )
    except ImportError:
        missing.append("pgpy")
    return found, missing


@dataclass(frozen=True)
class Figures:
    median_ms: float
    cpu_ms: float
    runs: int


def _cpu() -> float:
    """Seconds of CPU of this process and its waited-for children (each gpg)."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(work: Callable[[], object], runs: int, seconds: float) -> Figures:
    work()  # warm-up: imports, caches, the first gpg start
    times: list[float] = []
    cpu_before, deadline = _cpu(), time.monotonic() + seconds
    while len(times) < runs and (not times or time.monotonic() < deadline):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    cpu = (_cpu() - cpu_before) / len(times)
    return Figures(statistics.median(times) * 1000, cpu * 1000, len(times))


def _decrypts(encrypt: Encrypt, key: Key, data: bytes) -> None:
    decryptor = pysequoia.Tsk.from_bytes(key.secret.encode()).decryptor()
    assert pysequoia.decrypt(encrypt(data), decryptor).bytes == data


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--size", type=int, default=10_240)
    p.add_argument("--seconds", type=float, default=10, help="at most, per figure")
    args = p.parse_args()
    data = message(args.size)
    with tempfile.TemporaryDirectory(prefix="bench-gpg-") as home:
        gpg = gnupg.GPG(gnupghome=home)
        try:
            keys = make_keys(gpg)
            others, missing = other_libraries()
            libraries = [gnupg_library(gpg), maskmail_library(), *others]
            encrypting: dict[tuple[str, str], Figures] = {}
            checking: dict[tuple[str, str], Figures] = {}
            for key in keys:
                for lib in libraries:
                    encrypt = lib.prepare(key)
                    _decrypts(encrypt, key, data)
                    encrypting[lib.name, key.kind] = measure(
                        partial(encrypt, data), args.runs, args.seconds
                    )
                    checking[lib.name, key.kind] = measure(
                        partial(lib.check, key.public), args.runs, args.seconds
                    )
                    print(f"[{key.kind}] {lib.name}: {encrypting[lib.name, key.kind]}", flush=True)
        finally:
            subprocess.run(["gpgconf", "--homedir", home, "--kill", "all"], check=False)
    print(f"\n{len(data):,}-byte message; median ms, CPU ms per message (children included)\n")
    print(table(libraries, keys, encrypting, "encrypt"))
    print("\nchecking a pasted key: median ms, CPU ms\n")
    print(table(libraries, keys, checking, "check"))
    if missing:
        print(f"\nnot installed, left out: {', '.join(missing)}")


def table(
    libraries: list[Library], keys: list[Key], figures: dict[tuple[str, str], Figures], what: str
) -> str:
    head = "| library | " + " | ".join(f"{k.kind} {what} ms (CPU)" for k in keys)
    head += " | x python-gnupg, CPU |"
    rows = [head, "|---|" + "---:|" * (len(keys) + 1)]
    gpg_name = libraries[0].name
    for lib in libraries:
        cells = [
            f"{figures[lib.name, k.kind].median_ms:.2f} ({figures[lib.name, k.kind].cpu_ms:.2f})"
            for k in keys
        ]
        speedups = [
            figures[gpg_name, k.kind].cpu_ms / figures[lib.name, k.kind].cpu_ms for k in keys
        ]
        cells.append(" / ".join(f"{s:.1f}" for s in speedups))
        rows.append(f"| {lib.name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
