"""Real processes the fault tests break on purpose: `maskmail up`, and a private PostgreSQL."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import free_port, maskmail_cmd, wait_for_port


@dataclass
class Up:
    """`maskmail up` as a user starts it, which a test may kill (SIGKILL) and start again."""

    env: dict[str, str]
    log: Path
    api_port: int = field(default_factory=free_port)
    smtp_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> None:
        args = ("up", "--api-port", str(self.api_port), "--smtp-port", str(self.smtp_port))
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                maskmail_cmd(*args), env={**os.environ, **self.env}, stdout=out, stderr=out
            )
        wait_for_port(self.api_port, self.proc)
        wait_for_port(self.smtp_port, self.proc)

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as when the machine loses power or the OOM killer
        strikes."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=15)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@contextmanager
def up(env: dict[str, str], log: Path) -> Iterator[Up]:
    server = Up(env, log)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def rss_bytes(pid: int) -> int:
    """Resident set size of a process, from /proc (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def pg_bin(name: str) -> str:
    """A PostgreSQL server binary (Debian keeps them out of PATH); missing, the test fails."""
    found_in = Path("/usr/lib/postgresql").glob(f"*/bin/{name}")
    # The newest major version: "16" after "9", so by length first.
    candidates = sorted(found_in, key=lambda p: (len(p.parts[3]), p.parts[3]), reverse=True)
    if candidates:
        return str(candidates[0])
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"PostgreSQL's {name} is required: install the postgresql package")
    return found


@dataclass
class PrivatePostgres:
    """A throw-away PostgreSQL cluster on a free port, ours to stop and start.

    The shared server on 5432 serves other tests and must never be stopped. initdb refuses
    to run as root, so as root the cluster belongs to the ``postgres`` system user.
    """

    root: Path
    port: int = field(default_factory=free_port)

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *args], check=True, capture_output=True, timeout=60)

    def init(self) -> None:
        self._run(pg_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres")

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
            " -c max_connections=50"
        )
        log = str(self.root / "server.log")
        self._run(pg_bin("pg_ctl"), "-D", str(self.data), "-o", options, "-l", log, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run(pg_bin("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A started private cluster, stopped and deleted afterwards."""
    # Not under pytest's tmp dir: that one is private to root, and the server runs as postgres.
    root = Path(tempfile.mkdtemp(prefix="maskmail-pg-"))
    try:
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
        cluster = PrivatePostgres(root)
        cluster.init()
        cluster.start()
        try:
            yield cluster
        finally:
            if cluster.running():
                cluster.stop("immediate")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``check`` until it is true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise TimeoutError(f"timed out waiting for {what}")
