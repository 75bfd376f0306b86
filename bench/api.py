"""The API benchmark: maskmail, the DRF peer and the ceiling, alternated in one run.

For each backend, each system gets its own database with the same accounts. For each
worker count, the three servers run side by side and every endpoint is measured in
rounds of A B C, so drift on a shared machine hits all systems alike.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support import free_port

from bench import seed
from bench.lab import VENV_BIN, Database, Server, database, run, system_env
from bench.measure import Figures, Load, wrk

BASE = "/v3/relay/addresses"


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    path: str
    account: int  # index into ACCOUNTS: whose key is sent


ENDPOINTS = (
    Endpoint("page", "GET", f"{BASE}?paging=1&size=10", 0),
    Endpoint("post", "POST", BASE, 1),
    Endpoint("full", "GET", BASE, 2),
)
# Addresses per account: one to page, one to create under, one with the full 1,000 list.
ACCOUNTS = (100, 100, 1000)
SYSTEMS = ("maskmail", "peer", "ceiling", "fastapi")
# Systems that replay maskmail's responses from memory (bench/ceiling.py).
CEILINGS = {"ceiling": "bench.ceiling:app", "fastapi": "bench.ceiling:fastapi_app"}

Key = tuple[str, int, str, str]  # backend, workers, endpoint, system
Log = Callable[[str], None]


@dataclass
class Plan:
    backends: Sequence[str]
    workers: Sequence[int]
    systems: Sequence[str]
    endpoints: Sequence[str]
    reps: int
    load: Load
    work: Path
    peer_python: Path | None


def _fetch(port: int, endpoint: Endpoint, key: str) -> str:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{endpoint.path}",
        method=endpoint.method,
        headers={"Authorization": f"Bearer {key}"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        body: bytes = answer.read()
    return body.decode()


def server_command(system: str, port: int, workers: int, peer_python: Path | None) -> list[str]:
    if system == "maskmail":
        serve = ["serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]
        return [str(VENV_BIN / "maskmail"), *serve]
    if system == "peer":
        assert peer_python is not None
        serve = ["serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]
        return [str(peer_python.with_name("maskmail")), *serve]
    return [
        str(VENV_BIN / "uvicorn"),
        CEILINGS[system],
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--no-access-log",
        "--no-server-header",
        "--log-level",
        "warning",
    ]


@dataclass
class Stage:
    """One backend, prepared: a database and the account keys for each system."""

    dbs: dict[str, Database]
    keys: dict[str, list[str]]


@contextmanager
def stage(plan: Plan, backend: str, say: Log) -> Iterator[Stage]:
    with ExitStack() as stack:
        dbs: dict[str, Database] = {}
        keys: dict[str, list[str]] = {}
        for system in ("maskmail", "peer"):
            if system == "peer" and "peer" not in plan.systems:
                continue
            db = stack.enter_context(database(backend, plan.work, system))
            dbs[system] = db
            say(f"[{backend}] migrating and loading {system}")
            if system == "maskmail":
                run([str(VENV_BIN / "maskmail"), "db", "upgrade"], system_env(db))
                keys[system] = seed.load_maskmail(db, ACCOUNTS)
            else:
                assert plan.peer_python is not None
                run([str(plan.peer_python.with_name("maskmail")), "db", "upgrade"], system_env(db))
                keys[system] = seed.load_peer(plan.peer_python, db, ACCOUNTS)
        # The ceilings answer from memory; they need no database of their own.
        for ceiling in CEILINGS:
            dbs[ceiling] = dbs["maskmail"]
            keys[ceiling] = keys["maskmail"]
        yield Stage(dbs, keys)


def run_api(plan: Plan, say: Log) -> dict[Key, list[Figures]]:
    results: dict[Key, list[Figures]] = {}
    endpoints = [e for e in ENDPOINTS if e.name in plan.endpoints]
    for backend in plan.backends:
        with stage(plan, backend, say) as st:
            for workers in plan.workers:
                _round(plan, backend, workers, st, endpoints, results, say)
    return results


def _round(
    plan: Plan,
    backend: str,
    workers: int,
    st: Stage,
    endpoints: list[Endpoint],
    results: dict[Key, list[Figures]],
    say: Log,
) -> None:
    servers: dict[str, Server] = {}
    try:
        for system in plan.systems:
            env = system_env(st.dbs[system])
            if system in CEILINGS:
                bodies = plan.work / f"ceiling-{backend}.json"
                mm = servers["maskmail"]
                texts = {
                    e.name: _fetch(mm.port, e, st.keys["maskmail"][e.account]) for e in ENDPOINTS
                }
                bodies.write_text(json.dumps(texts))
                env["BENCH_CEILING_BODIES"] = str(bodies)
            port = free_port()
            log = plan.work / f"{system}-{backend}-{workers}.log"
            cmd = server_command(system, port, workers, plan.peer_python)
            servers[system] = Server(system, cmd, env, port, log)
            servers[system].wait_ready(ENDPOINTS[0].path, st.keys[system][0])
        warm = Load(duration=1, connections=plan.load.connections, threads=plan.load.threads)
        for system, server in servers.items():
            wrk(warm, _url(server, ENDPOINTS[0]), st.keys[system][0])
        for endpoint in endpoints:
            for rep in range(plan.reps):
                for system, server in servers.items():
                    key = st.keys[system][endpoint.account]
                    fig = wrk(plan.load, _url(server, endpoint), key, endpoint.method)
                    results.setdefault((backend, workers, endpoint.name, system), []).append(fig)
                    say(
                        f"[{backend} w={workers}] {endpoint.name:4} {system:8} #{rep + 1}: "
                        f"{fig.rps:9.0f} req/s  p50 {fig.p50_ms:7.2f} ms  p99 {fig.p99_ms:7.2f} ms"
                        + (f"  ERRORS {fig.errors}" if fig.errors else "")
                    )
    finally:
        for server in servers.values():
            server.stop()


def _url(server: Server, endpoint: Endpoint) -> str:
    return f"http://127.0.0.1:{server.port}{endpoint.path}"


def stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
