"""The mail family's options, and its section of the report: the table, targets and commands."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from statistics import median

from bench.mail import (
    RSS_TARGET_MB,
    SYSTEMS,
    Key,
    Log,
    MailFigures,
    MailPlan,
    run_mail,
    smtp_args,
)
from bench.report import machine

TITLE = "Mail: maskmail against Postfix"
TARGET_RATIO = 1.2


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mail-messages", type=int, default=2000, help="messages per measurement")
    p.add_argument("--mail-connections", type=int, default=8)
    p.add_argument("--mail-size", type=int, default=10_240, help="bytes per message")
    p.add_argument("--mail-reps", type=int, default=3, help="rounds of maskmail, Postfix")
    p.add_argument(
        "--mail-workers",
        type=int,
        default=len(os.sched_getaffinity(0)),
        help="maskmail smtp --workers (default: the cores, as maskmail's own default)",
    )


def smoke(args: argparse.Namespace) -> None:
    args.mail_messages, args.mail_reps = 40, 1


def plan_from(args: argparse.Namespace, backends: list[str], work: Path) -> MailPlan:
    return MailPlan(
        backends=backends,
        messages=args.mail_messages,
        connections=args.mail_connections,
        size=args.mail_size,
        reps=args.mail_reps,
        warmup=min(200, args.mail_messages),
        work=work,
        workers=args.mail_workers,
    )


def postfix_version() -> str:
    done = subprocess.run(
        ["postconf", "-h", "mail_version"], capture_output=True, text=True, check=False
    )
    return f"Postfix {done.stdout.strip() or 'unknown'}"


def round_ratio(mine: list[MailFigures], theirs: list[MailFigures]) -> float | None:
    """The median of per-round ratios: each round's pair saw the same machine state."""
    pairs = [a.rate / b.rate for a, b in zip(mine, theirs, strict=False) if b.rate > 0]
    return median(pairs) if pairs else None


def table(results: dict[Key, list[MailFigures]]) -> list[str]:
    rows = [
        "| backend | system | msg/s | p50 ms | p99 ms | CPU ms/msg | load+sink CPU ms/msg"
        " | peak PSS MB | peak RSS MB | processes | errors | x Postfix |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (backend, system), figs in results.items():
        ratio = (
            round_ratio(figs, results.get((backend, "postfix"), []))
            if system != "postfix"
            else None
        )

        def mid(attr: str, figs: list[MailFigures] = figs) -> float:
            return median(float(getattr(f, attr)) for f in figs)

        rows.append(
            f"| {backend} | {system} | {mid('rate'):,.0f} | {mid('p50_ms'):,.0f} "
            f"| {mid('p99_ms'):,.0f} | {mid('cpu_ms'):.2f} | {mid('harness_ms'):.2f} "
            f"| {mid('pss_mb'):.0f} "
            f"| {mid('rss_mb'):.0f} | {max(f.processes for f in figs)} "
            f"| {sum(f.errors for f in figs)} | {'-' if ratio is None else f'{ratio:.2f}'} |"
        )
    return rows


def targets(results: dict[Key, list[MailFigures]]) -> list[str]:
    """Issue 26's target: 1.2 times Postfix's rate at no more CPU per message, and every
    maskmail process under the RSS target."""
    lines = []
    for (backend, system), figs in results.items():
        if system == "postfix":
            continue
        theirs = results.get((backend, "postfix"), [])
        ratio = round_ratio(figs, theirs)
        rss = max(f.rss_mb for f in figs)
        cpu = median(f.cpu_ms for f in figs)
        their_cpu = median(f.cpu_ms for f in theirs) if theirs else None
        shown = "-" if ratio is None else f"{ratio:.2f}"
        cpu_met = their_cpu is not None and cpu <= their_cpu
        met = ratio is not None and ratio >= TARGET_RATIO and rss < RSS_TARGET_MB and cpu_met
        lines.append(
            f"- {backend}: maskmail/Postfix end to end {shown} (target >= {TARGET_RATIO}),"
            f" CPU {cpu:.2f} ms/msg against Postfix's"
            f" {'-' if their_cpu is None else f'{their_cpu:.2f}'} (target: no more),"
            f" largest maskmail process's peak RSS {rss:.0f} MB (target < {RSS_TARGET_MB}):"
            f" {'met' if met else 'not met'}."
        )
    return lines


def section(
    args: argparse.Namespace, argv: list[str], backends: list[str], work: Path, say: Log
) -> tuple[str, list[str]]:
    """Run the family and return its report section, commands and notes included."""
    plan = plan_from(args, backends, work)
    results = run_mail(plan, say)
    load = (
        f"python -m bench.mail_load --port PORT --count {plan.messages} --connections"
        f" {plan.connections} --size {plan.size} --seed ROUND < relay-addresses"
    )
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows = [
        f"Machine: {machine()}; {postfix_version()}.",
        "",
        f"Finished at {when}. {plan.messages:,} messages of {plan.size:,} bytes over"
        f" {plan.connections} connections"
        f" per measurement, {plan.reps} rounds of {' then '.join(SYSTEMS)} after a"
        f" {plan.warmup}-message warm-up each; medians shown, the ratio is the median of"
        " per-round ratios. CPU is the server's whole process tree (Postfix: master and every"
        " child, exited ones included); load+sink is the CPU of the load (its start-up"
        " included) and of the sink, which share the cores with the system under test;"
        " PSS is summed over the tree and sampled every 0.1 s;"
        " peak RSS is the largest high-water mark (VmHWM) among maskmail's processes (the"
        " parent and each worker) and, for Postfix, the sampled sum over its processes"
        " (which counts shared pages many times).",
        "",
        "```",
        " ".join(["bench/run", *map(shlex.quote, argv)]),
        f"# load: {load}",
        "# sink:  python -m bench.mail_sink PORT  (one per system, aiosmtpd, records arrivals)",
        "# maskmail: MASKMAIL_SMARTHOST=127.0.0.1:SINK maskmail "
        + shlex.join(smtp_args(plan.workers))
        + " --port PORT",
        "# postfix:  postfix -c DIR start  (bench/postfix_ref.py: virtual_alias_maps,"
        " relayhost = [127.0.0.1]:SINK)",
        "```",
        "",
        *table(results),
        "",
        *targets(results),
    ]
    return TITLE, rows
