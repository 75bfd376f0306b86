"""One API endpoint served by two checkouts of maskmail, alternated round by round.

    .venv/bin/python -m bench.ab OTHER_CHECKOUT {sqlite,postgres} {page,post,full} [--rounds 5]

Each checkout gets a fresh database of its own, migrated and seeded (``bench.seed``,
the API benchmark's accounts) by its own code in its own ``.venv``, and one
``maskmail serve`` worker. Then wrk measures the endpoint on each in turn, for
``--rounds`` rounds of ``--seconds`` (5 s), and the ratio this checkout / the other is
the median of each round's own. It answers "did this change make the endpoint slower",
on one machine, with the drift of a shared machine hitting both alike; each side's median
p50 and p99 latency show whether it made some requests wait longer. Every round opens 50
new connections, whose first requests wait longest on a busy server: longer rounds
weigh that less in the p99. The other checkout must have run ``make .venv/.synced``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from tests.support import free_port

from bench.api import ACCOUNTS, BASE, ENDPOINTS
from bench.lab import ROOT, Server, database, run, system_env
from bench.measure import Figures, Load, wrk

# Run by each checkout's own Python: its seed writes the tables its migrations made.
_SEED = (
    "import json, pathlib, sys; from bench import seed; from bench.lab import Database; "
    "db = Database(sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])); "
    "print(json.dumps(seed.load_maskmail(db, json.loads(sys.argv[4]))))"
)


def _serve(
    stack: ExitStack, tree: Path, backend: str, tmp: Path, label: str
) -> tuple[int, list[str]]:
    """A seeded server of ``tree``'s code: its port and the accounts' keys."""
    db = stack.enter_context(database(backend, tmp, label))
    env = {**system_env(db), "PYTHONPATH": str(tree)}
    run([str(tree / ".venv" / "bin" / "maskmail"), "db", "upgrade"], env)
    seed_args = [db.backend, db.url, str(db.data_dir), json.dumps(ACCOUNTS)]
    seeded = subprocess.run(
        [str(tree / ".venv" / "bin" / "python"), "-c", _SEED, *seed_args],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    keys: list[str] = json.loads(seeded.stdout)
    port = free_port()
    serve = ["serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    cmd = [str(tree / ".venv" / "bin" / "maskmail"), *serve]
    server = Server(label, cmd, env, port, tmp / f"{label}.log")
    stack.callback(server.stop)
    server.wait_ready(f"{BASE}?paging=1", keys[0])
    return port, keys


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="bench.ab", description=__doc__)
    p.add_argument("other", type=Path, help="the other checkout")
    p.add_argument("backend", choices=["sqlite", "postgres"])
    p.add_argument("endpoint", choices=[e.name for e in ENDPOINTS])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=int, default=5, help="length of each round")
    args = p.parse_args(argv)
    endpoint = next(e for e in ENDPOINTS if e.name == args.endpoint)
    trees = {"this": ROOT, "other": args.other.resolve()}
    figures: dict[str, list[Figures]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(prefix="maskmail-ab-") as tmp, ExitStack() as stack:
        urls = {}
        for name, tree in trees.items():
            port, keys = _serve(stack, tree, args.backend, Path(tmp), name)
            key = keys[endpoint.account]
            urls[name] = (f"http://127.0.0.1:{port}{endpoint.path}", key)
            wrk(Load(duration=2, connections=50), *urls[name], endpoint.method)  # warm up
        for n in range(args.rounds):
            for name, (url, key) in urls.items():
                load = Load(duration=args.seconds, connections=50)
                figures[name].append(wrk(load, url, key, endpoint.method))
            sides = ", ".join(_round(figures, side) for side in trees)
            print(f"round {n + 1}: {sides}", file=sys.stderr)
    this, other = ([f.rps for f in figures[name]] for name in trees)
    ratio = statistics.median(a / b for a, b in zip(this, other, strict=True))
    print(f"{args.backend} {args.endpoint}: this / other = {ratio:.2f} (median of {args.rounds})")
    for name in trees:
        p50 = statistics.median(f.p50_ms for f in figures[name])
        p99 = statistics.median(f.p99_ms for f in figures[name])
        print(f"  {name}: latency p50 {p50:.1f} ms, p99 {p99:.1f} ms (medians of the rounds)")
    return 0


def _round(figures: dict[str, list[Figures]], name: str) -> str:
    last = figures[name][-1]
    return f"{name} {last.rps:,.0f} req/s (p50 {last.p50_ms:.1f} ms, p99 {last.p99_ms:.1f} ms)"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
