"""Medians, same-run ratios, the printed table and the generated part of docs/benchmarks.md."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from statistics import median

from bench.measure import Figures

BEGIN = "<!-- bench/run: generated from here -->"
END = "<!-- bench/run: generated up to here -->"

Key = tuple[str, int, str, str]


def ratio(results: dict[Key, list[Figures]], key: Key, other: str) -> float | None:
    """The median of per-round ratios: each round's pair saw the same machine state."""
    mine = results.get(key)
    theirs = results.get((*key[:3], other))
    if not mine or not theirs:
        return None
    pairs = [a.rps / b.rps for a, b in zip(mine, theirs, strict=False) if b.rps > 0]
    return median(pairs) if pairs else None


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(results: dict[Key, list[Figures]]) -> list[str]:
    """Markdown rows: one per backend, workers, endpoint and system, medians over rounds."""
    rows = [
        "| backend | workers | endpoint | system | req/s | p50 ms | p99 ms | errors"
        " | x peer | x ceiling |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for key, figs in results.items():
        backend, workers, endpoint, system = key
        vs_peer = ratio(results, key, "peer") if system == "maskmail" else None
        vs_ceiling = ratio(results, key, "ceiling") if system == "maskmail" else None
        rows.append(
            f"| {backend} | {workers} | {endpoint} | {system} "
            f"| {median(f.rps for f in figs):,.0f} "
            f"| {median(f.p50_ms for f in figs):.2f} | {median(f.p99_ms for f in figs):.2f} "
            f"| {sum(f.errors for f in figs)} "
            f"| {_fmt(vs_peer, '.1f')} | {_fmt(vs_ceiling, '.3f')} |"
        )
    return rows


def machine() -> str:
    model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    wrk = shutil.which("wrk")
    version = ""
    if wrk:
        out = subprocess.run([wrk, "--version"], capture_output=True, text=True, check=False)
        version = (out.stdout or out.stderr).splitlines()[0] if (out.stdout or out.stderr) else ""
    return (
        f"{os.cpu_count()} cores, {model}; {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}; {version.strip()}"
    )


def generated(sections: Sequence[tuple[str, list[str]]], commands: list[str], note: str) -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        BEGIN,
        "",
        f"## Latest run ({now})",
        "",
        f"- Machine: {machine()}.",
        f"- {note}",
        "",
        "Commands:",
        "",
        "```",
        *commands,
        "```",
        "",
    ]
    for title, rows in sections:
        lines += [f"### {title}", "", *rows, ""]
    lines.append(END)
    return "\n".join(lines) + "\n"


def rewrite(doc: Path, block: str) -> None:
    """Replace the generated block, keeping the hand-written text around it."""
    text = doc.read_text() if doc.exists() else "# Benchmarks\n\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        text = head + block + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)
