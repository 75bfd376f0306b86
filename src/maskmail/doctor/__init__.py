"""``maskmail doctor``'s checks of a deployment: each says whether one piece works and,
when it does not, what to do. One failing (or raising, or hanging) never stops the
others; none prints a key, a password or a user's mailbox."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.config import Settings
from maskmail.doctor.dns_checks import ptr, public_der, relay_records
from maskmail.doctor.report import TIMEOUT, Check
from maskmail.mail.socketmap import MAP, MAX_REQUEST, netstring
from maskmail.readiness import Readiness, smtp_problem
from maskmail.store.engine import create_engine

__all__ = ["Check", "Doctor"]

MAX_SKEW = 30.0  # seconds; DKIM signatures carry the time they were made
# A name no user can hold (RFC 6761): the socketmap and policy service must say so.
NOBODY_DOMAIN = "doctor.invalid"


@dataclass
class Doctor:
    """What the checks share: the settings, where rspamd and the policy service
    listen, and the clock."""

    settings: Settings
    milter: tuple[str, int] = ("127.0.0.1", 11332)
    policy_host: str = "127.0.0.1"  # where Postfix reaches the policy port
    now: Callable[[], float] = time.time
    engine: AsyncEngine | None = field(default=None, init=False)

    async def run(self) -> list[Check]:
        """Every check, in the report's order."""
        self.engine = None if self._missing_sqlite() else self._engine()
        try:
            groups = await asyncio.gather(
                self._guard(("database", "migrations"), self.database),
                self._guard(("redis",), self.redis),
                self._guard(
                    ("mx", "spf", "dkim record", "dmarc"), partial(relay_records, self.settings)
                ),
                self._guard(("ptr",), partial(ptr, self.settings)),
                self._guard(("dkim key",), self.dkim_key),
                self._guard(("socketmap",), self.socketmap),
                self._guard(("policy",), self.policy),
                self._guard(("milter",), self.milter_port),
                self._guard(("smarthost",), self.smarthost),
                self._guard(("data directory",), self.data_dir),
                self._guard(("clock",), self.clock),
            )
        finally:
            if self.engine is not None:
                await self.engine.dispose()
        return [check for group in groups for check in group]

    async def _guard(
        self, names: tuple[str, ...], check: Callable[[], Awaitable[list[Check]]]
    ) -> list[Check]:
        """The check's lines, or a failing line for each name it could not judge."""
        try:
            async with asyncio.timeout(TIMEOUT):
                return await check()
        except TimeoutError:
            reason = f"no answer within {TIMEOUT:g} s"
        except Exception as exc:  # a check that breaks is a failing line, not a traceback
            reason = f"the check failed ({type(exc).__name__})"
        return [Check(name, False, reason) for name in names]

    def _engine(self) -> AsyncEngine:
        config = self.settings
        return create_engine(config.resolved_database_url, pool_size=1, timeout=config.db_timeout)

    def _missing_sqlite(self) -> Path | None:
        """A SQLite file that does not exist: connecting would make it, empty."""
        url = make_url(self.settings.resolved_database_url)
        if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
            return None
        path = Path(url.database)
        return None if path.is_file() else path

    async def database(self) -> list[Check]:
        missing = self._missing_sqlite()
        if missing is not None or self.engine is None:
            return [
                Check("database", False, f"no database at {missing}: run maskmail db upgrade"),
                Check("migrations", False, "no database to read"),
            ]
        problems = await Readiness.of(self.engine).problems()
        if "database" in problems:
            return [
                Check(
                    "database",
                    False,
                    f"{problems['database']}: check MASKMAIL_DATABASE_URL and that the "
                    "database server runs",
                ),
                Check("migrations", False, "no database to read"),
            ]
        schema = problems.get("schema")
        return [
            Check("database", True, f"answers ({self.engine.dialect.name})"),
            Check("migrations", schema is None, schema or "at the newest revision"),
        ]

    async def redis(self) -> list[Check]:
        if not self.settings.redis_url:
            return [Check("redis", True, "not set: each process counts rate limits alone")]
        try:
            await self._redis_time()
        except RedisDown as exc:
            return [
                Check(
                    "redis",
                    False,
                    f"does not answer ({exc}): check MASKMAIL_REDIS_URL and that Redis runs",
                )
            ]
        return [Check("redis", True, "answers")]

    async def _redis_time(self) -> float:
        import coredis

        client: coredis.Redis[bytes] = coredis.Redis.from_url(self.settings.redis_url)
        try:
            return (await client.time()).timestamp()
        except Exception as exc:
            raise RedisDown(type(exc).__name__) from exc
        finally:
            client.connection_pool.disconnect()

    async def dkim_key(self) -> list[Check]:
        path = self.settings.dkim_key_path
        if not path.is_file():
            return [Check("dkim key", False, f"no key at {path}: run maskmail dkim generate")]
        if public_der(path) is None:
            return [
                Check(
                    "dkim key",
                    False,
                    f"{path} is not a private key: run maskmail dkim generate --force",
                )
            ]
        if path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            return [Check("dkim key", False, f"others may read {path}: chmod 600 {path}")]
        return [Check("dkim key", True, f"{path} signs forwards")]

    def _policy_address(self) -> tuple[str, int] | None:
        port = self.settings.policy_port
        return (self.policy_host, port) if port else None

    async def socketmap(self) -> list[Check]:
        address = self._policy_address()
        if address is None:
            return [Check("socketmap", False, POLICY_OFF)]
        reader, writer = await _connect(*address)
        try:
            writer.write(netstring(f"{MAP} {NOBODY_DOMAIN}".encode()))
            await writer.drain()
            size = int((await reader.readuntil(b":"))[:-1])
            if size > MAX_REQUEST:
                return [Check("socketmap", False, "answers no socketmap reply: see maskmail's log")]
            reply = (await reader.readexactly(size + 1))[:-1]
        finally:
            writer.close()
        if reply.startswith(b"NOTFOUND"):
            return [Check("socketmap", True, f"answers on port {address[1]}")]
        said = reply.decode("utf-8", "replace")
        return [
            Check("socketmap", False, f"answers {said!r}, not NOTFOUND: see the log of maskmail")
        ]

    async def policy(self) -> list[Check]:
        address = self._policy_address()
        if address is None:
            return [Check("policy", False, POLICY_OFF)]
        reader, writer = await _connect(*address)
        request = (
            "request=smtpd_access_policy\nprotocol_state=RCPT\nclient_address=127.0.0.1\n"
            f"sender=\nrecipient=nobody@{NOBODY_DOMAIN}\n\n"
        )
        try:
            writer.write(request.encode())
            await writer.drain()
            line = await reader.readline()
        finally:
            writer.close()
        if line.startswith(b"action="):
            return [Check("policy", True, f"answers on port {address[1]}")]
        return [Check("policy", False, "no action in its answer: see the log of maskmail")]

    async def milter_port(self) -> list[Check]:
        host, port = self.milter
        try:
            _, writer = await _connect(host, port)
        except OSError:
            return [
                Check(
                    "milter",
                    False,
                    f"nothing listens at {host}:{port}: start rspamd (docs/postfix.md), "
                    "or pass --milter HOST:PORT",
                )
            ]
        writer.close()
        return [Check("milter", True, f"rspamd listens at {host}:{port}")]

    async def smarthost(self) -> list[Check]:
        address = self.settings.smarthost_address
        if address is None:
            return [
                Check(
                    "smarthost",
                    False,
                    f"MASKMAIL_SMARTHOST is unset: forwards stay in {self.settings.outbox_dir}",
                )
            ]
        problem = await smtp_problem(*address)
        host, port = address
        if problem is not None:
            fix = problem.replace("the SMTP listener", f"the smarthost {host}:{port}")
            return [Check("smarthost", False, f"{fix}: check MASKMAIL_SMARTHOST")]
        return [Check("smarthost", True, f"{host}:{port} greets with 220")]

    async def data_dir(self) -> list[Check]:
        path = self.settings.data_dir
        if not path.is_dir():
            return [Check("data directory", False, f"{path} does not exist: mkdir -m 700 {path}")]
        if not os.access(path, os.W_OK | os.X_OK):
            return [
                Check(
                    "data directory",
                    False,
                    f"this user cannot write {path}: chown it to maskmail's user",
                )
            ]
        if path.stat().st_mode & stat.S_IRWXO:
            return [Check("data directory", False, f"others may open {path}: chmod o-rwx {path}")]
        return [Check("data directory", True, f"{path} is writable and private")]

    async def clock(self) -> list[Check]:
        """This host's clock against the database server's and Redis's, where there are."""
        references: dict[str, float] = {}
        if self.engine is not None and self.engine.dialect.name == "postgresql":
            with contextlib.suppress(Exception):  # the database's own line says why
                async with self.engine.connect() as conn:
                    now = await conn.scalar(text("SELECT extract(epoch FROM clock_timestamp())"))
                references["the database server"] = float(now)
        if self.settings.redis_url:
            with contextlib.suppress(RedisDown):  # its own line says so
                references["Redis"] = await self._redis_time()
        if not references:
            return [Check("clock", True, "no other server's clock to compare with")]
        mine = self.now()
        off = {name: mine - theirs for name, theirs in references.items()}
        wrong = {name: skew for name, skew in off.items() if abs(skew) > MAX_SKEW}
        if wrong:
            name, skew = next(iter(wrong.items()))
            return [
                Check(
                    "clock",
                    False,
                    f"{abs(skew):.0f} s {'ahead of' if skew > 0 else 'behind'} {name}: "
                    "run an NTP client (systemd-timesyncd or chrony)",
                )
            ]
        return [Check("clock", True, f"agrees with {' and '.join(references)}")]


POLICY_OFF = "MASKMAIL_POLICY_PORT is 0: start maskmail with --policy-port (docs/postfix.md)"


class RedisDown(Exception):
    """Redis did not answer."""


async def _connect(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    async with asyncio.timeout(TIMEOUT - 1):
        return await asyncio.open_connection(host, port)
