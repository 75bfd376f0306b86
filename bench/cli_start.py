"""How fast the ``maskmail`` command starts: the wall time of whole processes.

    .venv/bin/python -m bench.cli_start [--runs 11] [--before OTHER/.venv/bin/maskmail]
                                        [--no-bytecode-cache]

Times ``maskmail --version``, ``--help``, ``user list``, ``key revoke`` and ``db upgrade``
(on a migrated temporary SQLite database with 100 users) and a bare ``python -c pass`` (the
interpreter's own start, the floor), each ``--runs`` times after a warm-up, in turn so that
a change in the machine's load touches every command alike. Prints a markdown table of
wall-time medians against issue 23's targets, with the median CPU (user + system) that a
busy machine moves less, and the load average, since on a shared machine the
absolute figures move with it; exits 1 when a median misses its target. With
``--before``, the same commands of another install (an older checkout's) run in the same
rounds, and the table adds the median of each round's ratio, now / before, of the wall
time and of the CPU time.

Modules load from cached bytecode, as in an install made as docs/deploy.md says (``uv
sync --compile-bytecode``): the warm-up round writes it to a temporary directory
(``PYTHONPYCACHEPREFIX``), even where ``PYTHONDONTWRITEBYTECODE`` is set, and leaves the
installs untouched, so that both installs of ``--before`` are timed alike.
``--no-bytecode-cache`` compiles every module from source on every run instead, as a
development checkout under ``PYTHONDONTWRITEBYTECODE=1`` does: most of that time is
compiling.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MASKMAIL = str(Path(sys.executable).with_name("maskmail"))
USERS = 100


def cases(maskmail: str) -> list[tuple[str, list[str], float | None]]:
    """Each command: its name, its argv and its target in seconds (None: no target)."""
    return [
        ("python -c pass", [sys.executable, "-c", "pass"], None),
        ("maskmail --version", [maskmail, "--version"], 0.5),
        ("maskmail --help", [maskmail, "--help"], 0.5),
        ("maskmail user list", [maskmail, "user", "list"], 1.0),
        # A key no one has: the command's whole path, then its one-line refusal.
        ("maskmail key revoke KEY", [maskmail, "key", "revoke", "mm_none"], 1.0),
        # On a database already at the newest schema: Alembic's whole check, nothing to do.
        ("maskmail db upgrade", [maskmail, "db", "upgrade"], 1.0),
    ]


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of ARGV."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, capture_output=True, check=False, timeout=120)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def prepare(env: dict[str, str]) -> None:
    """A migrated database with USERS users, for the commands that read it."""
    subprocess.run([MASKMAIL, "db", "upgrade"], env=env, capture_output=True, check=True)
    script = (
        "import asyncio, os\n"
        "from maskmail.store import accounts\n"
        "from maskmail.store.engine import create_engine, transaction\n"
        "async def main() -> None:\n"
        "    engine = create_engine(os.environ['URL'], pool_size=1)\n"
        "    async with transaction(engine) as conn:\n"
        f"        for n in range({USERS}):\n"
        "            await accounts.add_user(conn, f'user{n}@example.com')\n"
        "    await engine.dispose()\n"
        "asyncio.run(main())\n"
    )
    url = f"sqlite+aiosqlite:///{env['MASKMAIL_DATA_DIR']}/maskmail.db"
    subprocess.run([sys.executable, "-c", script], env={**env, "URL": url}, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(prog="bench.cli_start", description=__doc__)
    parser.add_argument("--runs", type=int, default=11, help="timed runs of each command")
    parser.add_argument("--before", help="another install's maskmail, timed alongside")
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="compile every module from source on every run",
    )
    args = parser.parse_args()
    installs = {"now": MASKMAIL, **({"before": args.before} if args.before else {})}
    with tempfile.TemporaryDirectory() as tmp:
        # Bytecode is read and written only under this prefix, never the installs' own.
        env = {**os.environ, "MASKMAIL_DATA_DIR": tmp, "PYTHONPYCACHEPREFIX": f"{tmp}/pyc"}
        if args.no_bytecode_cache:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            bytecode = "no bytecode cache (every module compiled on every run)"
        else:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            bytecode = "bytecode cached by the warm-up round"
        prepare(env)
        load = os.getloadavg()[0]
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for run in range(args.runs + 1):
            for install, maskmail in installs.items():
                for name, argv, _ in cases(maskmail):
                    took = timed(argv, env)
                    if run:  # the first round warms the page cache and writes the bytecode
                        times.setdefault((install, name), []).append(took)
        load = max(load, os.getloadavg()[0])
    print(
        f"{args.runs} runs each, {os.cpu_count()} cores, load average up to {load:.1f},"
        f" {bytecode}\n"
    )
    ratio = " now / before | CPU now / before |" if args.before else ""
    print(f"| command | median s | min s | max s | CPU s | target s | met |{ratio}")
    print(f"|---|---:|---:|---:|---:|---:|---|{'---:|---:|' if args.before else ''}")
    missed = False
    for name, _, target in cases(MASKMAIL):
        now = [wall for wall, _ in times["now", name]]
        cpu = statistics.median(c for _, c in times["now", name])
        median = statistics.median(now)
        met = "-" if target is None else ("yes" if median < target else "no")
        missed |= met == "no"
        shown = "-" if target is None else f"{target:.1f}"
        row = (
            f"| `{name}` | {median:.3f} | {min(now):.3f} | {max(now):.3f} | {cpu:.3f}"
            f" | {shown} | {met} |"
        )
        if args.before:
            for column in (0, 1):  # wall, then CPU
                pairs = zip(times["now", name], times["before", name], strict=True)
                row += f" {statistics.median(a[column] / b[column] for a, b in pairs):.2f} |"
        print(row)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
