"""``bench/run``: every benchmark, a table on stdout, and docs/benchmarks.md rewritten.

Benchmarks are families; each one returns markdown rows: ``api`` (with ``scale``) and
``mail`` (against Postfix, bench/mail.py).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from pathlib import Path

from bench import api, mail_report, report, scale
from bench.lab import ROOT, peer_venv
from bench.measure import Load


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench/run", description=__doc__)
    p.add_argument("--duration", type=float, default=5, help="seconds per measurement")
    p.add_argument("--reps", type=int, default=3, help="rounds of A B C per figure")
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--workers", default="1,2", help="worker counts, e.g. 1,2")
    p.add_argument("--backends", default="sqlite,postgres")
    p.add_argument("--systems", default=",".join(api.SYSTEMS))
    p.add_argument("--endpoints", default=",".join(e.name for e in api.ENDPOINTS))
    p.add_argument("--families", default="api,mail", help="which benchmarks: api,mail")
    mail_report.add_arguments(p)
    p.add_argument("--scale", action="store_true", help="also the 1M-address run (minutes)")
    p.add_argument(
        "--smoke",
        action="store_true",
        help="a one-second check that the harness works: sqlite, one worker, no peer",
    )
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = p.parse_args(argv)
    if args.smoke:
        args.duration, args.reps, args.workers = 1, 1, "1"
        args.backends, args.systems = "sqlite", "maskmail,ceiling"
        mail_report.smoke(args)
    return args


def publish(
    args: argparse.Namespace, argv: list[str], load: Load, sections: list[tuple[str, list[str]]]
) -> None:
    """Print the tables and rewrite the generated block of the benchmarks page."""
    commands = [
        " ".join(["bench/run", *map(shlex.quote, argv)]),
        "# each figure: "
        + shlex.join(load.command("http://127.0.0.1:PORT/v3/relay/addresses")).replace(
            f"{ROOT}/", ""
        ),
        "# with BENCH_KEY=<the account's key> BENCH_METHOD=GET|POST",
        "# servers: " + shlex.join(api.server_command("maskmail", 0, 1, None)[1:]) + " (maskmail)",
        "#          PEER_WORKERS=N $BENCH_PEER_DIR/bin/maskmail serve (peer, gunicorn sync)",
        "#          uvicorn bench.ceiling:app --workers N (ceiling)",
        "#          uvicorn bench.ceiling:fastapi_app --workers N (bare FastAPI ceiling)",
    ]
    note = (
        f"{args.reps} rounds of {args.duration:g} s per figure at {args.connections} connections,"
        " systems alternated within each round; medians shown, ratios are medians of per-round"
        " ratios. This 2-core machine may be shared, so absolute figures move between runs;"
        " trust the same-run ratios."
    )
    for title, rows in sections:
        print(f"\n{title}\n")
        print("\n".join(rows), flush=True)
    report.rewrite(args.out, report.generated(sections, commands, note))
    print(f"\nwrote {args.out}", file=sys.stderr)


def main(argv: list[str]) -> int:
    args = parse(argv)
    systems = [s for s in api.SYSTEMS if s in _csv(args.systems)]
    if "ceiling" in systems and "maskmail" not in systems:
        raise SystemExit("the ceiling replays maskmail's responses: include maskmail")
    load = Load(duration=args.duration, connections=args.connections)
    with tempfile.TemporaryDirectory(prefix="maskmail-bench-") as tmp:
        plan = api.Plan(
            backends=_csv(args.backends),
            workers=[int(w) for w in _csv(args.workers)],
            systems=systems,
            endpoints=_csv(args.endpoints),
            reps=args.reps,
            load=load,
            work=Path(tmp),
            peer_python=peer_venv() / "bin" / "python" if "peer" in systems else None,
        )
        sections: list[tuple[str, list[str]]] = []
        if "api" in _csv(args.families):
            results = api.run_api(plan, api.stderr)
            sections.append(
                ("API: maskmail against the DRF peer and the ceiling", report.table(results))
            )
            publish(args, argv, load, sections)
            if args.scale:
                sections.append(scale.run_scale(plan, results, api.stderr))
                publish(args, argv, load, sections)
        if "mail" in _csv(args.families):
            work = Path(tmp) / "mail"
            work.mkdir()
            sections.append(mail_report.section(args, argv, _csv(args.backends), work, api.stderr))
            publish(args, argv, load, sections)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
