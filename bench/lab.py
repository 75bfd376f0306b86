"""The bench's surroundings: databases made and dropped per run, and server processes.

Databases and ports come from tests/support.py, which the test suite uses the same way;
MASKMAIL_TEST_POSTGRES names the PostgreSQL server for both.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support import fresh_database

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
PEER_DIR = Path(os.environ.get("BENCH_PEER_DIR", ROOT.parent / "shared" / "peers" / "drf"))
# The harness measures throughput, not the rate limiter's refusals.
UNLIMITED = "1000000000/second"


@dataclass(frozen=True)
class Database:
    """One empty database for one system: its SQLAlchemy URL, and a data dir for files."""

    backend: str
    url: str
    data_dir: Path

    @property
    def plain_url(self) -> str:
        """The URL without the async driver, as the peer and raw drivers want it."""
        return self.url.replace("+asyncpg", "").replace("+aiosqlite", "")


@contextmanager
def database(backend: str, tmp: Path, label: str) -> Iterator[Database]:
    """A dedicated database for this run only: a fresh SQLite file, or a PostgreSQL
    database created and dropped around the block (the tests' own helper; no other
    database is touched)."""
    data_dir = tmp / f"{backend}-{label}"
    data_dir.mkdir(parents=True, exist_ok=True)
    with fresh_database(backend, data_dir) as url:
        yield Database(backend, url, data_dir)


def system_env(db: Database) -> dict[str, str]:
    """The settings every system reads (the peer honours the same names)."""
    return {
        **os.environ,
        "MASKMAIL_DATABASE_URL": db.url,
        "MASKMAIL_DATA_DIR": str(db.data_dir),
        "MASKMAIL_RATE_LIMIT": UNLIMITED,
        "MASKMAIL_DOMAIN": "relay.localhost",
    }


def run(cmd: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} failed: {done.stderr.strip()[-2000:]}")
    return done.stdout


def peer_venv() -> Path:
    """Build the peer's venv once with its own setup.sh."""
    out = run(["bash", str(PEER_DIR / "setup.sh")], dict(os.environ))
    return Path(out.strip().splitlines()[-1])


class Server:
    """A server process group we started, stopped by its own id when done."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str], port: int, log: Path):
        self.name, self.port = name, port
        self.log = log.open("wb")
        self.proc = subprocess.Popen(
            cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def wait_ready(self, path: str, key: str, timeout: float = 60) -> None:
        """Until one authenticated request succeeds (every worker may not be up yet)."""
        deadline = time.monotonic() + timeout
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", headers={"Authorization": f"Bearer {key}"}
        )
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}")
            try:
                with urllib.request.urlopen(request, timeout=5) as answer:
                    if answer.status == 200:
                        return
            except (OSError, urllib.error.URLError):
                time.sleep(0.2)
        raise TimeoutError(f"{self.name} did not answer on port {self.port}")

    def pids(self) -> list[int]:
        """The server and its worker processes (our own process group)."""
        found = []
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                try:
                    if os.getpgid(int(proc.name)) == self.proc.pid:
                        found.append(int(proc.name))
                except OSError:
                    continue
        return found

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=15)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.log.close()


def rss_kib(pids: list[int]) -> int:
    """Resident memory of these processes, summed (kB)."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total
