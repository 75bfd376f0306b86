"""CPU time and memory of a server's process tree, read from /proc.

Postfix is a master and dozens of short-lived children that share pages, so memory is
compared as PSS (each shared page split among its users) summed over the tree, and CPU
includes the time of children that already exited (``cutime``/``cstime`` of whoever
reaped them).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name sits in parentheses and may itself contain spaces or ')'.
    return text[text.rindex(")") + 2 :].split()


def tree(roots: Iterable[int]) -> list[int]:
    """These processes and all their live descendants."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None:
                parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.append(pid)
            todo.extend(parents.get(pid, ()))
    return found


def cpu_by_pid(roots: Iterable[int]) -> dict[int, float]:
    """Each process of the tree: its user and system time plus its reaped children's."""
    found = {}
    for pid in tree(roots):
        fields = _stat_fields(pid)
        if fields is not None:
            # utime, stime, cutime, cstime: fields 14-17 of stat, 12-15 after the name.
            found[pid] = sum(int(v) for v in fields[11:15]) / TICKS
    return found


def cpu_seconds(roots: Iterable[int]) -> float:
    """User and system time of the tree, including its exited and reaped children.

    A live process's own time plus what it collected from children it reaped: summed over
    the live tree this counts every process once, whether it is still running or not.
    """
    return sum(cpu_by_pid(roots).values())


def command_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _kib(path: str, name: str) -> int:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(name):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def pss_kib(pids: Iterable[int]) -> int:
    return sum(_kib(f"/proc/{pid}/smaps_rollup", "Pss:") for pid in pids)


def rss_kib(pids: Iterable[int]) -> int:
    return sum(_kib(f"/proc/{pid}/status", "VmRSS:") for pid in pids)


def peak_rss_kib(pid: int) -> int:
    """The kernel's high-water mark of one process's resident set (VmHWM)."""
    return _kib(f"/proc/{pid}/status", "VmHWM:")


@dataclass
class Peaks:
    pss_kib: int = 0
    rss_kib: int = 0
    processes: int = 0


class MemorySampler:
    """Samples the tree's summed PSS and RSS in a thread until stopped; keeps the peaks."""

    def __init__(self, roots: list[int], interval: float = 0.1) -> None:
        self.roots, self.interval = roots, interval
        self.peaks = Peaks()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        pids = tree(self.roots)
        self.peaks.pss_kib = max(self.peaks.pss_kib, pss_kib(pids))
        self.peaks.rss_kib = max(self.peaks.rss_kib, rss_kib(pids))
        self.peaks.processes = max(self.peaks.processes, len(pids))

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
