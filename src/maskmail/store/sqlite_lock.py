"""Who serves a SQLite database: every serving process holds a shared lock on a file
beside it, and a restore takes the lock exclusively, so neither runs during the other.

The lock is ``flock`` on ``<database>.serving``: the kernel drops it when the process
ends, however it ends, so a crash never leaves the database marked as served.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# Held for the life of the process; closing the descriptor would release the lock.
_held: list[int] = []


class ServingConflict(Exception):
    """A restore and a serving process met on one database; nothing was changed."""


def lock_file(database: Path) -> Path:
    return database.with_name(f"{database.name}.serving")


def _lock(database: Path, mode: int) -> int:
    # Read-only and readable by all: a restore run as root must not lock the service out.
    fd = os.open(lock_file(database), os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise
    return fd


def hold_while_serving(database: Path) -> None:
    """Mark ``database`` as served by this process until it exits."""
    try:
        _held.append(_lock(database, fcntl.LOCK_SH))
    except BlockingIOError as exc:
        raise ServingConflict(
            f"a restore of {database} is running; start maskmail again when it is done"
        ) from exc


@contextmanager
def nobody_serving(database: Path) -> Iterator[None]:
    """Keep every maskmail process from serving ``database`` while the block runs."""
    try:
        fd = _lock(database, fcntl.LOCK_EX)
    except BlockingIOError as exc:
        raise ServingConflict(
            f"a maskmail process serves {database}; stop every maskmail service "
            "(API, mail plane) before restoring"
        ) from exc
    try:
        yield
    finally:
        os.close(fd)
