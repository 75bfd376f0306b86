"""Helpers shared by the test packages: databases per backend, free ports, processes."""

from __future__ import annotations

import asyncio
import fcntl
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import asyncpg
from sqlalchemy import column, inspect, select, table
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import keys
from maskmail.core.custom_domains import CHECKS
from maskmail.core.dkim_keys import generate_key, txt_value
from maskmail.store import accounts, address_counts, custom_domains
from maskmail.store.addresses import create_address
from maskmail.store.engine import create_engine, transaction
from maskmail.store.tables import addresses

PG_ADMIN_DSN = os.environ.get("MASKMAIL_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
BACKENDS = ("sqlite", "postgres")


def refused_by_rules_the_schema_cannot_state(path: str) -> bool:
    """Routes where a schema-valid request may still be a documented 422, for the
    schemathesis runs: an email that matches the format at a reserved domain or the
    relay's own (contacts); a subdomain name that is taken, used before or blocklisted,
    or use_subdomain on without one; a mailbox the user has, the limit, a wrong code,
    an unverified id, or the default switched off without another (mailboxes); a
    public key that is refused (mailboxes/{id}/pgp); a domain that is the relay's or taken
    (domains), a suffix not the caller's (SimpleLogin's custom alias)."""
    return (
        path.endswith("/contacts")
        or path.startswith("/v3/relay/subdomains")
        or "/mailboxes" in path
        or path.startswith("/v3/relay/domains")
        or path == "/api/v3/alias/custom/new"
    )


# How long a maskmail command may take to start or finish. Generous, because it only
# matters when something is wrong: a process that exits early is reported at once, and on a
# machine shared with other work a start took over a minute.
STARTUP_SECONDS = 180.0

# Below Linux's ephemeral range (32768 and up), so that no outgoing connection takes a
# port between the moment it is handed out and the moment its server binds it.
_LISTEN_PORTS = range(20000, 32768)
_handed_out: set[int] = set()


def free_port() -> int:
    """A loopback port nothing listens on, not handed out before in this run."""
    rng = secrets.SystemRandom()
    for _ in range(1000):
        port = rng.choice(_LISTEN_PORTS)
        if port in _handed_out:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError("no free loopback port below the ephemeral range")


async def _pg_admin(statement: str) -> None:
    conn = await asyncpg.connect(PG_ADMIN_DSN, timeout=5)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


def _pg_url(name: str) -> str:
    base = PG_ADMIN_DSN.rsplit("/", 1)[0].split("://", 1)[1]
    return f"postgresql+asyncpg://{base}/{name}"


@contextmanager
def fresh_database(backend: str, tmp: Path) -> Iterator[str]:
    """An empty database of the given backend, dropped afterwards; yields its URL.

    PostgreSQL is required: if it cannot be reached this raises, and the test fails.
    """
    if backend == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp / f'mm-{secrets.token_hex(4)}.db'}"
        return
    name = f"maskmail_test_{os.getpid()}_{secrets.token_hex(4)}"
    try:
        asyncio.run(_pg_admin(f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError) as exc:
        raise RuntimeError(
            f"PostgreSQL is required for these tests and is not reachable at {PG_ADMIN_DSN}: {exc}"
        ) from exc
    try:
        yield _pg_url(name)
    finally:
        asyncio.run(_pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def maskmail_cmd(*args: str) -> list[str]:
    return [str(Path(sys.executable).with_name("maskmail")), *args]


def run_cli(
    env: dict[str, str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        maskmail_cmd(*args),
        env={**os.environ, **env},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=STARTUP_SECONDS,
        check=False,
    )


def wait_for_port(
    port: int, proc: subprocess.Popen[bytes] | None = None, timeout: float = STARTUP_SECONDS
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited early with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on port {port}")


# Where the held sockets wait in the child until the shell moves them to 3, 4, ...
_PASSED_FDS_FROM = 50


def activated(command: list[str], sockets: Sequence[socket.socket]) -> tuple[list[str], list[int]]:
    """``command`` given ``sockets`` as systemd's socket activation does (sd_listen_fds(3):
    file descriptors from 3, LISTEN_FDS and LISTEN_PID set); the descriptors to pass."""
    passed = [
        fcntl.fcntl(s.fileno(), fcntl.F_DUPFD, _PASSED_FDS_FROM + i) for i, s in enumerate(sockets)
    ]
    moves = " ".join(f"{3 + i}<&{fd} {fd}<&-" for i, fd in enumerate(passed))
    script = f'exec {moves}; export LISTEN_PID=$$ LISTEN_FDS={len(passed)}; exec "$@"'
    return ["bash", "-c", script, "bash", *command], passed


@contextmanager
def running(
    env: dict[str, str],
    *args: str,
    port: int,
    log: Path,
    sockets: Sequence[socket.socket] = (),
) -> Iterator[subprocess.Popen[bytes]]:
    """A maskmail process, stopped (SIGTERM, then SIGKILL) when the block ends; given
    ``sockets`` (listening) as systemd passes a socket unit's."""
    command, passed = (
        activated(maskmail_cmd(*args), sockets) if sockets else (maskmail_cmd(*args), [])
    )
    with log.open("ab") as out:
        try:
            proc = subprocess.Popen(
                command,
                env={**os.environ, **env},
                stdout=out,
                stderr=subprocess.STDOUT,
                pass_fds=passed,
            )
        finally:
            for fd in passed:
                os.close(fd)
        try:
            wait_for_port(port, proc)
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def make_keys(url: str, *mailboxes: str) -> list[str]:
    """A user and an API key for each mailbox, committed."""
    engine = create_engine(url, pool_size=1)
    made = []
    try:
        async with transaction(engine) as conn:
            for mailbox in mailboxes:
                key = keys.generate_key()
                await accounts.add_key(
                    conn, await accounts.add_user(conn, mailbox), keys.hash_key(key)
                )
                made.append(key)
    finally:
        await engine.dispose()
    return made


async def address_ids(conn: AsyncConnection, user_id: int) -> list[int]:
    """The user's address ids, oldest first: what the tests check the store against."""
    found = await conn.execute(
        select(addresses.c.id).where(addresses.c.user_id == user_id).order_by(addresses.c.id)
    )
    return [int(row[0]) for row in found]


async def new_address(conn: AsyncConnection, domain: str = "relay.test") -> tuple[int, int]:
    """A new user with one relay address: ``(user id, address id)``."""
    user_id = await accounts.add_user(conn, f"u{secrets.token_hex(6)}@example.com")
    address = await create_address(conn, user_id, domain=domain, length=8)
    return user_id, address.id


async def kept_address_count(conn: AsyncConnection, user_id: int) -> int:
    """The address count the database keeps for a user, at any revision the migration
    tests stop at: a column of ``users`` before migration 0011, ``address_counts`` after."""
    slots = await conn.run_sync(lambda sync: inspect(sync).has_table("address_counts"))
    if slots:
        return await address_counts.total(conn, user_id)
    kept = await conn.scalar(
        select(column("address_count")).select_from(table("users")).where(column("id") == user_id)
    )
    return int(kept or 0)


async def add_custom_domain(
    conn: AsyncConnection, user_id: int, name: str, *, relay_domain: str, verified: bool = True
) -> tuple[int, str]:
    """The user's domain ``name``, with a new DKIM key, its checks all passed (or all
    failed): the domain's id and its DKIM record's value."""
    private, public = generate_key()
    made = await custom_domains.add_domain(
        conn,
        user_id,
        name,
        relay_domains=frozenset({relay_domain}),
        limit=5,
        token="t",
        selector="sel1",
        private_key=private,
        dkim_txt=txt_value(public),
    )
    await custom_domains.record_check(conn, made.id, dict.fromkeys(CHECKS, verified))
    return made.id, txt_value(public)
