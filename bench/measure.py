"""One load measurement: wrk from a separate process on loopback, parsed from its Lua summary."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SCRIPT = Path(__file__).with_name("wrk.lua")


@dataclass(frozen=True)
class Load:
    """How hard and how long to push."""

    duration: float
    connections: int
    threads: int = 2

    def command(self, url: str) -> list[str]:
        wrk = shutil.which("wrk") or "wrk"
        return [
            wrk,
            f"-t{self.threads}",
            f"-c{self.connections}",
            f"-d{self.duration:g}s",
            "--timeout",
            "10s",
            "-s",
            str(SCRIPT),
            url,
        ]


@dataclass(frozen=True)
class Figures:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int

    @classmethod
    def parse(cls, output: str) -> Figures:
        line = next((ln for ln in output.splitlines() if ln.startswith("BENCH ")), None)
        if line is None:
            raise RuntimeError(f"wrk printed no summary:\n{output[-2000:]}")
        raw = json.loads(line[len("BENCH ") :])
        errors = sum(raw[k] for k in ("connect", "read", "write", "status", "timeout"))
        good = raw["requests"] - raw["status"]
        return cls(
            rps=good / (raw["duration_us"] / 1e6),
            p50_ms=raw["p50_us"] / 1000,
            p99_ms=raw["p99_us"] / 1000,
            errors=errors,
        )


def wrk(load: Load, url: str, key: str, method: str = "GET") -> Figures:
    """Run wrk once; requests that were not answered 2xx count as errors, not throughput."""
    env = {**os.environ, "BENCH_KEY": key, "BENCH_METHOD": method}
    done = subprocess.run(
        load.command(url),
        env=env,
        capture_output=True,
        text=True,
        timeout=load.duration + 60,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed: {done.stderr.strip()}")
    return Figures.parse(done.stdout)
