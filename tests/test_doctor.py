"""``maskmail doctor``: every check passes on a working set-up, and each deliberately
broken piece fails its own line, and only that one, with the fix."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from maskmail.cli import app
from maskmail.config import Settings
from maskmail.core.dkim_keys import txt_value
from maskmail.doctor import Check, Doctor
from maskmail.mail.dkim import generate_key
from maskmail.mail.plane import mail_plane
from maskmail.mail.socketmap import netstring
from maskmail.store.engine import create_engine
from tests.dns_server import running_dns
from tests.sink import HOST, Sink
from tests.support import free_port

pytestmark = pytest.mark.anyio

DOMAIN = "relay.test"
MAIL_HOST = "mail.relay.test"
REDIS = "redis://127.0.0.1:6379/0"
NAMES = [
    "database",
    "migrations",
    "redis",
    "mx",
    "spf",
    "dkim record",
    "dmarc",
    "ptr",
    "dkim key",
    "socketmap",
    "policy",
    "milter",
    "smarthost",
    "data directory",
    "clock",
]


def zone(public_der: bytes) -> dict[str, list[tuple[str, str]]]:
    value = txt_value(public_der)
    return {
        f"{DOMAIN}.": [("MX", f"10 {MAIL_HOST}."), ("TXT", f'"v=spf1 a:{MAIL_HOST} -all"')],
        # The test server has no wildcards: the one subdomain the doctor asks about.
        f"maskmail-doctor.{DOMAIN}.": [("MX", f"10 {MAIL_HOST}.")],
        f"maskmail._domainkey.{DOMAIN}.": [("TXT", f'"{value[:200]}" "{value[200:]}"')],
        f"_dmarc.{DOMAIN}.": [("TXT", '"v=DMARC1; p=quarantine"')],
        f"{MAIL_HOST}.": [("A", "127.0.0.1")],
        "1.0.0.127.in-addr.arpa.": [("PTR", f"{MAIL_HOST}.")],
    }


@dataclass
class SetUp:
    """A working deployment; a test breaks one piece of it before running the doctor."""

    settings: Settings
    zone: dict[str, list[tuple[str, str]]]
    milter: tuple[str, int]
    now: Callable[[], float] = time.time
    # In place of maskmail's policy port: the socketmap's reply, and the policy's.
    stand_in: tuple[bytes, bytes] | None = None
    milter_up: bool = True
    values: dict[str, Any] = field(default_factory=dict)

    def set(self, **values: Any) -> None:
        self.values.update(values)

    async def run(self) -> list[Check]:
        settings = self.settings.model_copy(update=self.values)
        async with self._services(settings):
            return await Doctor(settings, milter=self.milter, now=self.now).run()

    @asynccontextmanager
    async def _services(self, settings: Settings) -> AsyncIterator[None]:
        milter = await asyncio.start_server(_hang_up, *self.milter) if self.milter_up else None
        try:
            if self.stand_in is not None:
                server = await asyncio.start_server(
                    partial(_stand_in, *self.stand_in), HOST, settings.policy_port
                )
                async with server:
                    yield
            else:
                # The plane runs as set up: only the doctor sees the broken settings.
                engine = create_engine(self.settings.resolved_database_url, pool_size=2)
                try:
                    async with mail_plane(self.settings, engine, host=HOST, port=free_port()):
                        yield
                finally:
                    await engine.dispose()
        finally:
            if milter is not None:
                milter.close()


async def _hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.close()


SILENT = b"(silent)"


async def _stand_in(
    socketmap: bytes, policy: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Answers one socketmap look-up or one policy request with the reply given (or,
    given SILENT, reads it and waits)."""
    first = await reader.read(1)
    if socketmap == SILENT:
        await reader.read()  # until the doctor gives up and hangs up
        writer.close()
        return
    if first.isdigit():
        await reader.readuntil(b",")
        writer.write(netstring(socketmap))
    else:
        await reader.readuntil(b"\n\n")
        writer.write(policy)
    await writer.drain()
    writer.close()


@pytest.fixture
def setup(database_url: str, tmp_path: Path, sink: Sink) -> Iterator[SetUp]:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    private, public = generate_key()
    key = data / "dkim.key"
    key.write_bytes(private)
    key.chmod(0o600)
    records = zone(public)
    with running_dns(records) as dns_port:
        settings = Settings(
            database_url=database_url,
            data_dir=data,
            domain=DOMAIN,
            smtp_hostname=MAIL_HOST,
            smarthost=f"{HOST}:{sink.port}",
            redis_url=REDIS,
            dns_resolver=f"127.0.0.1:{dns_port}",
            policy_port=free_port(),
        )
        yield SetUp(settings, records, (HOST, free_port()))


def failing(checks: list[Check]) -> dict[str, str]:
    return {c.name: c.detail for c in checks if not c.ok}


async def test_a_working_set_up_passes_every_check(setup: SetUp) -> None:
    checks = await setup.run()
    assert [c.name for c in checks] == NAMES
    assert failing(checks) == {}


def _no_database(s: SetUp) -> None:
    s.set(database_url=f"sqlite:///{s.settings.data_dir / 'missing.db'}")


def _unmigrated(s: SetUp) -> None:
    empty = s.settings.data_dir / "empty.db"
    empty.touch()
    s.set(database_url=f"sqlite:///{empty}")


def _redis_down(s: SetUp) -> None:
    s.set(redis_url=f"redis://127.0.0.1:{free_port()}/0")


def _no_dkim_key(s: SetUp) -> None:
    (s.settings.data_dir / "dkim.key").chmod(0o644)


def _data_dir_open(s: SetUp) -> None:
    s.settings.data_dir.chmod(0o755)


# Each broken piece, the lines it must fail (the migrations cannot be read without the
# database), and a word of the fix.
BROKEN: dict[str, tuple[Callable[[SetUp], object], set[str], str]] = {
    "database": (_no_database, {"database", "migrations"}, "run maskmail db upgrade"),
    "migrations": (_unmigrated, {"migrations"}, "run maskmail db upgrade"),
    "redis": (_redis_down, {"redis"}, "check MASKMAIL_REDIS_URL"),
    "mx": (lambda s: s.zone[f"{DOMAIN}."].pop(0), {"mx"}, f"publish MX {DOMAIN} 10 {MAIL_HOST}"),
    "wildcard mx": (
        lambda s: s.zone.pop(f"maskmail-doctor.{DOMAIN}."),
        {"mx"},
        f"publish MX *.{DOMAIN} 10 {MAIL_HOST}",
    ),
    "spf": (
        lambda s: s.zone[f"{DOMAIN}."].append(("TXT", '"v=spf1 -all"')),
        {"spf"},
        f"v=spf1 a:{MAIL_HOST} -all",
    ),
    "dkim record": (
        lambda s: s.zone.update({f"maskmail._domainkey.{DOMAIN}.": [("TXT", '"v=DKIM1; p=AAAA"')]}),
        {"dkim record"},
        f"publish TXT maskmail._domainkey.{DOMAIN} v=DKIM1; k=rsa; p=",
    ),
    "dmarc": (
        lambda s: s.zone.update({f"_dmarc.{DOMAIN}.": [("TXT", '"v=DMARC1; p=none"')]}),
        {"dmarc"},
        f"publish TXT _dmarc.{DOMAIN} v=DMARC1; p=quarantine",
    ),
    "ptr": (
        lambda s: s.zone.update({"1.0.0.127.in-addr.arpa.": [("PTR", "elsewhere.test.")]}),
        {"ptr"},
        "ask your hosting provider",
    ),
    "dkim key": (_no_dkim_key, {"dkim key"}, "chmod 600"),
    # What maskmail answers while its database is down, and a service that is not maskmail's.
    "socketmap": (
        lambda s: setattr(
            s, "stand_in", (b"TEMP the database is unavailable", b"action=DUNNO\n\n")
        ),
        {"socketmap"},
        "TEMP the database is unavailable",
    ),
    "policy": (
        lambda s: setattr(s, "stand_in", (b"NOTFOUND ", b"hello\n\n")),
        {"policy"},
        "no action",
    ),
    "milter": (lambda s: setattr(s, "milter_up", False), {"milter"}, "start rspamd"),
    "smarthost": (
        lambda s: s.set(smarthost=f"{HOST}:{free_port()}"),
        {"smarthost"},
        "check MASKMAIL_SMARTHOST",
    ),
    "data directory": (_data_dir_open, {"data directory"}, "chmod o-rwx"),
    "clock": (lambda s: setattr(s, "now", lambda: time.time() + 600), {"clock"}, "ahead of"),
}


@pytest.mark.parametrize("piece", list(BROKEN))
async def test_each_broken_piece_fails_its_own_line_with_the_fix(setup: SetUp, piece: str) -> None:
    breaks, lines, fix = BROKEN[piece]
    breaks(setup)
    found = failing(await setup.run())
    assert set(found) == lines
    assert fix in found[piece.removeprefix("wildcard ")]


@pytest.mark.slow
async def test_a_check_that_hangs_fails_alone_in_time(setup: SetUp) -> None:
    # A DNS server that never answers, and a policy port that takes the request and
    # never replies: their lines fail after their timeout, the others pass.
    setup.set(dns_resolver=f"127.0.0.1:{free_port()}")
    setup.stand_in = (SILENT, SILENT)
    started = time.monotonic()
    found = failing(await setup.run())
    assert set(found) == {"mx", "spf", "dkim record", "dmarc", "ptr", "socketmap", "policy"}
    assert found["policy"] == "no answer within 5 s"
    assert time.monotonic() - started < 8


def test_the_command_exits_1_and_json_has_every_check(tmp_path: Path) -> None:
    # A resolver that answers that no name exists: failing lines, at once.
    with running_dns({}) as dns_port:
        env = {"MASKMAIL_DATA_DIR": str(tmp_path), "MASKMAIL_DNS_RESOLVER": f"127.0.0.1:{dns_port}"}
        result = CliRunner().invoke(app, ["doctor", "--json"], env=env)
        text = CliRunner().invoke(app, ["doctor"], env=env)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False
    assert [c["name"] for c in report["checks"]] == NAMES
    assert text.exit_code == 1
    assert "✗ database: no database at" in text.stdout
    assert len(text.stdout.splitlines()) == len(NAMES)


@pytest.mark.slow
def test_the_report_holds_no_password(tmp_path: Path) -> None:
    secret = "s3cret-pw"
    with running_dns({}) as dns_port:
        env = {
            "MASKMAIL_DATA_DIR": str(tmp_path),
            "MASKMAIL_DATABASE_URL": f"postgresql://maskmail:{secret}@127.0.0.1:{free_port()}/x",
            "MASKMAIL_REDIS_URL": f"redis://:{secret}@127.0.0.1:{free_port()}/0",
            "MASKMAIL_SMARTHOST": f"127.0.0.1:{free_port()}",
            "MASKMAIL_DNS_RESOLVER": f"127.0.0.1:{dns_port}",
        }
        results = [
            CliRunner().invoke(app, ["doctor", *flags], env=env) for flags in ([], ["--json"])
        ]
    for result in results:
        assert result.exit_code == 1
        assert "database" in result.output and "redis" in result.output
        assert secret not in result.output


def test_a_milter_address_that_is_not_host_port_is_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["doctor", "--milter", "localhost"])
    assert result.exit_code == 2
    assert "--milter" in result.output and "host:port" in result.output
