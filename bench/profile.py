"""Where a maskmail server spends its time under the benchmark's load (py-spy, sampled).

    .venv/bin/python -m bench.profile sqlite page [--seconds 8] [--py-spy PATH] [--top N]
        [--keep FILE]

Seeds the benchmark's accounts in a fresh database, starts ``maskmail serve`` with one
worker, drives one endpoint with wrk at 50 connections and samples the server with
``py-spy record --format raw``. Prints the share of samples per module (self time) and
the functions that hold the most samples including their callees. py-spy is not a
project dependency: install it anywhere (``pip install py-spy``) and pass its path.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from tests.support import free_port

from bench import seed
from bench.api import ACCOUNTS, BASE, ENDPOINTS, server_command
from bench.lab import VENV_BIN, Server, database, run, system_env
from bench.measure import Load, wrk

PACKAGES = ("maskmail", "fastapi", "starlette", "sqlalchemy", "uvicorn", "limits", "asyncpg")


def _package(frame: str) -> str:
    if "(" not in frame:
        return "no Python frame"
    where = frame.rpartition("(")[2]  # py-spy shortens paths to their import name
    for name in PACKAGES:
        if where.startswith(f"{name}/") or f"/{name}/" in where:
            return name
    return "stdlib and others"


def summarise(raw: Path, top: int = 40) -> list[str]:
    """Self share per package and per function, then the functions with the largest
    inclusive share."""
    own: Counter[str] = Counter()
    own_function: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        n = int(count)
        total += n
        frames = stack.split(";")
        own[_package(frames[-1])] += n
        own_function[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame.split(" (")[0] + " " + _package(frame)] += n
    lines = [f"{total} samples", "self time by package:"]
    lines += [f"  {n / total:6.1%}  {name}" for name, n in own.most_common()]
    lines.append("self time by function:")
    lines += [f"  {n / total:6.1%}  {name}" for name, n in own_function.most_common(top // 2)]
    lines.append("inclusive:")
    lines += [f"  {n / total:6.1%}  {name}" for name, n in inclusive.most_common(top)]
    return lines


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="bench.profile", description=__doc__)
    p.add_argument("backend", choices=["sqlite", "postgres"])
    p.add_argument("endpoint", choices=[e.name for e in ENDPOINTS])
    p.add_argument("--seconds", type=int, default=8)
    p.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy")
    p.add_argument("--top", type=int, default=40, help="functions listed inclusive")
    p.add_argument("--keep", type=Path, help="copy the raw samples here")
    args = p.parse_args(argv)
    endpoint = next(e for e in ENDPOINTS if e.name == args.endpoint)
    with tempfile.TemporaryDirectory(prefix="maskmail-profile-") as tmp:
        work = Path(tmp)
        with database(args.backend, work, "profile") as db:
            env = system_env(db)
            run([str(VENV_BIN / "maskmail"), "db", "upgrade"], env)
            keys = seed.load_maskmail(db, ACCOUNTS)
            port = free_port()
            cmd = server_command("maskmail", port, 1, None)
            server = Server("maskmail", cmd, env, port, work / "server.log")
            try:
                server.wait_ready(f"{BASE}?paging=1", keys[0])
                url = f"http://127.0.0.1:{port}{endpoint.path}"
                key = keys[endpoint.account]
                wrk(Load(duration=1, connections=50), url, key, endpoint.method)  # warm up
                out = work / "samples.txt"
                spy = subprocess.Popen(
                    [
                        *(args.py_spy, "record", "--format", "raw", "-r", "200"),
                        *("-d", str(args.seconds), "-o", str(out), "-p", str(server.pids()[-1])),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                load = Load(duration=args.seconds + 1, connections=50)
                figures = wrk(load, url, key, endpoint.method)
                spy.wait()
            finally:
                server.stop()
            print(f"{args.backend} {args.endpoint}: {figures.rps:,.0f} req/s while sampled")
            if args.keep:
                shutil.copyfile(out, args.keep)
            print("\n".join(summarise(out, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
