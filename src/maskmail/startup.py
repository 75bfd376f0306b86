"""Start-up failures, each told in one line that says what to do.

The commands that start a server (``up``, ``serve``, ``smtp``) and ``db upgrade`` meet
the database, the data directory and their ports first; what goes wrong there is the
operator's to fix, so it is explained rather than shown as a traceback.
"""

from __future__ import annotations

import errno
import os
import secrets
import socket
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy.engine import make_url

from maskmail.config import Settings
from maskmail.store import sqlite_lock
from maskmail.store.migrate import UnknownRevision, upgrade

# PostgreSQL's SQLSTATEs for an unknown database and for a refused login.
_NO_DATABASE = "3D000"
_AUTH_FAILED = frozenset({"28000", "28P01"})


class StartupError(Exception):
    """A failure to report as one line on stderr."""


def check_data_dir(settings: Settings) -> None:
    """The data directory exists (it is made if need be) and can be written."""
    path = settings.data_dir
    probe = path / f".write-test-{secrets.token_hex(4)}"
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise StartupError(
            f"cannot write the data directory {path} ({exc.strerror}); make it writable "
            "by this user, or set MASKMAIL_DATA_DIR to a directory that is"
        ) from exc


def prepare_database(settings: Settings) -> None:
    """Check, mark as served and migrate the database a starting process will use.

    A SQLite file's folder must exist unless it is the data directory (made before
    this): a mistyped path would otherwise be a new empty database, hiding every address.
    """
    url = make_url(settings.resolved_database_url)
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        database = Path(url.database)
        if not database.parent.is_dir():
            raise StartupError(
                f"the folder {database.parent} of the SQLite database does not exist; "
                "fix MASKMAIL_DATABASE_URL, or make the folder if it is right"
            )
        try:
            sqlite_lock.hold_while_serving(database)
        except sqlite_lock.ServingConflict as exc:
            raise StartupError(str(exc)) from exc
    try:
        upgrade(settings.resolved_database_url)
    except UnknownRevision as exc:
        raise StartupError(str(exc)) from exc


def bind(host: str, port: int, what: str, option: str) -> socket.socket:
    """A listening-ready socket on ``host:port``, or a :class:`StartupError` saying why not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise listen_failure(exc, host, port, what, option) from exc
    return sock


# sd_listen_fds(3): the first socket systemd passes is file descriptor 3.
_FIRST_PASSED_FD = 3


def inherited_socket(port: int) -> socket.socket | None:
    """The listening socket on ``port`` that systemd passed to this process (socket
    activation, deploy/systemd/maskmail-smtp.socket), or None.

    systemd holds such a socket while the service restarts: connections made meanwhile
    wait in its queue for the next process instead of being refused, so Postfix's
    lookups and deliveries wait a few seconds rather than fail (docs/operations.md).
    """
    if os.environ.get("LISTEN_PID") != str(os.getpid()):
        return None
    try:
        count = int(os.environ.get("LISTEN_FDS", "0"))
    except ValueError:
        return None
    for fd in range(_FIRST_PASSED_FD, _FIRST_PASSED_FD + count):
        try:
            sock = socket.socket(fileno=fd)
        except OSError:
            continue
        address = sock.getsockname()
        if sock.type == socket.SOCK_STREAM and isinstance(address, tuple) and address[1] == port:
            sock.setblocking(False)
            return sock
        sock.detach()  # not ours to close
    return None


def listen_failure(exc: OSError, host: str, port: int, what: str, option: str) -> StartupError:
    if exc.errno == errno.EADDRINUSE:
        return StartupError(
            f"cannot serve {what} on {host}:{port}: the port is already in use; stop the "
            f"program using it, or choose another port with {option}"
        )
    return StartupError(
        f"cannot serve {what} on {host}:{port}: {exc.strerror or exc}; check --host and the port"
    )


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def explain(exc: BaseException, settings: Settings) -> str | None:
    """One line for a failure to reach or open the database, or None if it is not one."""
    url = make_url(settings.resolved_database_url)
    for cause in _chain(exc):
        state = getattr(cause, "sqlstate", None)
        if state == _NO_DATABASE:
            return (
                f"the database {url.database!r} does not exist on the PostgreSQL server at "
                f"{url.host}:{url.port or 5432}; create it (createdb {url.database}) or fix "
                "MASKMAIL_DATABASE_URL"
            )
        if state in _AUTH_FAILED:
            return (
                f"the PostgreSQL server at {url.host}:{url.port or 5432} refused user "
                f"{url.username!r}; fix the user or password in MASKMAIL_DATABASE_URL"
            )
    for cause in _chain(exc):
        # A network error names no file; one that does is about something else.
        if (
            url.get_backend_name() == "postgresql"
            and isinstance(cause, OSError | TimeoutError)
            and getattr(cause, "filename", None) is None
        ):
            reason = getattr(cause, "strerror", None) or type(cause).__name__
            return (
                f"cannot reach the PostgreSQL server at {url.host}:{url.port or 5432} "
                f"({reason}); start it, or fix the host and port in MASKMAIL_DATABASE_URL"
            )
        database = Path(url.database or "")
        where = database.parent
        if url.get_backend_name() == "sqlite" and (
            _about(cause, database) or "unable to open database file" in str(cause)
        ):
            reason = getattr(cause, "strerror", None) or "cannot be opened"
            return (
                f"cannot open the SQLite database in {where} ({reason}); make that "
                "directory writable, or fix MASKMAIL_DATABASE_URL or MASKMAIL_DATA_DIR"
            )
    return None


def _about(cause: BaseException, database: Path) -> bool:
    """Whether ``cause`` is an OSError on the database's directory, the database or a file
    SQLite keeps beside it (``-journal``, ``-wal``, ``-shm``): any other (a busy port, a
    metrics file in the same directory) is not the database's to explain."""
    name = getattr(cause, "filename", None)
    if not isinstance(cause, OSError) or not isinstance(name, str | bytes):
        return False
    path, base = Path(os.fsdecode(name)).resolve(), database.resolve()
    return path == base.parent or (path.parent == base.parent and path.name.startswith(base.name))
