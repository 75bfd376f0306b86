"""The mail benchmark: maskmail's SMTP plane against a private Postfix, alternated in one run.

Both relay the same load (``bench/mail_load.py``, a separate process) to the same kind of
sink (``bench/mail_sink.py``, one per system, in its own process): maskmail through
``maskmail smtp`` with the sink as its smarthost, Postfix through ``virtual_alias_maps``
with the sink as its relayhost (``bench/postfix_ref.py``). Measurements alternate
maskmail, Postfix, maskmail, Postfix, ... and the figures are medians over them.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tests.support import free_port, wait_for_port

from bench import procs, seed
from bench.lab import VENV_BIN, Database, Server, database, run, system_env
from bench.postfix_ref import running_reference

SYSTEMS = ("maskmail", "postfix")
USERS, ADDRESSES_PER_USER = 100, 10
RSS_TARGET_MB = 150
Log = Callable[[str], None]


@dataclass(frozen=True)
class MailPlan:
    backends: list[str]
    messages: int
    connections: int
    size: int
    reps: int
    warmup: int
    work: Path
    workers: int


@dataclass(frozen=True)
class MailFigures:
    rate: float  # messages/s from the first send until the sink had them all
    p50_ms: float
    p99_ms: float
    cpu_ms: float  # CPU of the server's process tree per message
    # CPU of the load and the sink per message (the load's start-up included): they share
    # the cores with the system under test, so the rates compare less than the CPU does.
    harness_ms: float
    pss_mb: float  # peak of the tree's summed PSS
    rss_mb: float  # maskmail: its largest process's peak (VmHWM); Postfix: the tree's summed RSS
    processes: int
    errors: int  # refused at send, never arrived, or arrived at the wrong mailbox


def relay_addresses() -> dict[str, str]:
    """Relay address -> owner's mailbox, as bench.seed names them."""
    return {
        f"u{user}n{i}@{seed.DOMAIN}": f"user{user}@example.com"
        for user in range(1, USERS + 1)
        for i in range(ADDRESSES_PER_USER)
    }


class Sink:
    """bench/mail_sink.py in its own process, for the whole run."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.duplicates = 0  # in the last collection: messages that arrived twice
        self.log = log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.mail_sink", str(self.port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        self._expect("ready")

    def _expect(self, word: str) -> None:
        out: IO[str] | None = self.proc.stdout
        assert out is not None
        line = out.readline().strip()
        if line != word:
            raise RuntimeError(f"the sink said {line!r}, not {word!r} (see {self.log.name})")

    def collect(self, expected: int, timeout: float, out: Path) -> dict[str, list[object]]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"collect {expected} {timeout} {out}\n")
        self.proc.stdin.flush()
        self._expect("done")
        found = json.loads(out.read_text())
        self.duplicates = int(found.get("duplicates", 0))
        arrivals: dict[str, list[object]] = found["arrivals"]
        return arrivals

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@dataclass
class Running:
    """One system under test: where to send, its sink, and its process tree's roots."""

    name: str
    port: int
    sink: Sink
    roots: Callable[[], list[int]]
    own_peak_rss_kib: Callable[[], int] | None = None


def smtp_args(workers: int) -> list[str]:
    """maskmail's command line, but for the port."""
    return ["smtp", "--workers", str(workers), "--host", "127.0.0.1"]


def _largest_peak(pid: int) -> int:
    """The largest high-water mark (VmHWM) among the parent and its workers: the RSS
    target holds for each process."""
    return max(procs.peak_rss_kib(each) for each in procs.tree([pid]))


@contextmanager
def running_maskmail(
    backend: str,
    plan: MailPlan,
    sink: Sink,
    say: Log,
    seeded: Callable[[Database], None] | None = None,
) -> Iterator[Running]:
    """``seeded`` is called with the database once it is seeded, before the server starts."""
    with database(backend, plan.work, "mail") as db:
        env = system_env(db)
        run([str(VENV_BIN / "maskmail"), "db", "upgrade"], env)
        seed.load_maskmail(db, [ADDRESSES_PER_USER] * USERS)
        if seeded is not None:
            seeded(db)
        env["MASKMAIL_SMARTHOST"] = f"127.0.0.1:{sink.port}"
        port = free_port()
        cmd = [str(VENV_BIN / "maskmail"), *smtp_args(plan.workers), "--port", str(port)]
        server = Server("maskmail", cmd, env, port, plan.work / f"maskmail-smtp-{backend}.log")
        try:
            wait_for_port(port, server.proc)
            say(f"[{backend}] maskmail smtp on port {port}, pid {server.proc.pid}")
            pid = server.proc.pid
            yield Running("maskmail", port, sink, lambda: [pid], lambda: _largest_peak(pid))
        finally:
            server.stop()


@contextmanager
def running_postfix(sink: Sink, say: Log) -> Iterator[Running]:
    port = free_port()
    aliases = sorted(relay_addresses().items())
    with running_reference(
        domain=seed.DOMAIN, port=port, sink_port=sink.port, aliases=aliases
    ) as inst:
        wait_for_port(port)
        say(f"postfix on port {port}, master pid {inst.master_pid}")
        yield Running("postfix", port, sink, lambda: [inst.master_pid])


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _reaped_children_cpu() -> float:
    """User and system time of this process's children that have exited and been
    reaped: across a ``subprocess.run``, that run's process tree."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def measure(system: Running, plan: MailPlan, count: int, load_seed: int) -> MailFigures:
    """Send ``count`` messages through ``system`` and wait until its sink has them all.

    The same seed gives both systems the same messages to the same addresses."""
    owners = relay_addresses()
    roots = system.roots()
    cpu_before = procs.cpu_seconds(roots)
    sink_before = procs.cpu_seconds([system.sink.proc.pid])
    children_before = _reaped_children_cpu()
    with procs.MemorySampler(roots) as memory:
        load = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.mail_load",
                f"--port={system.port}",
                f"--count={count}",
                f"--connections={plan.connections}",
                f"--size={plan.size}",
                f"--seed={load_seed}",
            ],
            input="\n".join(owners),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        load_cpu = _reaped_children_cpu() - children_before
        if load.returncode != 0:
            raise RuntimeError(f"the mail load failed: {load.stderr[-2000:]}")
        sent = json.loads(load.stdout)
        started: dict[str, float] = sent["started"]
        arrivals = system.sink.collect(
            len(started), 60 + count / 10, plan.work / f"arrivals-{system.name}.json"
        )
        # Let the last deliveries' bookkeeping (queue files, counters) finish in the window.
        time.sleep(0.5)
        cpu = procs.cpu_seconds(roots) - cpu_before
        harness = load_cpu + procs.cpu_seconds([system.sink.proc.pid]) - sink_before
    latencies = [
        float(arrivals[mid][0]) - start  # type: ignore[arg-type]
        for mid, start in started.items()
        if mid in arrivals
    ]
    misrouted = sum(
        1 for mid, (_, rcpt) in arrivals.items() if rcpt != owners.get(sent["recipients"][mid])
    )
    first = min(started.values(), default=0.0)
    last = max((float(a[0]) for a in arrivals.values()), default=first)  # type: ignore[arg-type]
    own = system.own_peak_rss_kib() if system.own_peak_rss_kib else memory.peaks.rss_kib
    return MailFigures(
        rate=len(arrivals) / (last - first) if last > first else 0.0,
        p50_ms=_quantile(latencies, 0.50) * 1000,
        p99_ms=_quantile(latencies, 0.99) * 1000,
        cpu_ms=cpu * 1000 / max(len(arrivals), 1),
        harness_ms=harness * 1000 / max(len(arrivals), 1),
        pss_mb=memory.peaks.pss_kib / 1024,
        rss_mb=own / 1024,
        processes=memory.peaks.processes,
        errors=count - len(latencies) + misrouted,
    )


Key = tuple[str, str]  # backend, system


def run_mail(plan: MailPlan, say: Log) -> dict[Key, list[MailFigures]]:
    results: dict[Key, list[MailFigures]] = {}
    for backend in plan.backends:
        with ExitStack() as stack:
            sinks = {name: Sink(plan.work / f"sink-{name}-{backend}.log") for name in SYSTEMS}
            for sink in sinks.values():
                stack.callback(sink.stop)
            say(f"[{backend}] mail: seeding and starting maskmail and postfix")
            systems = [
                stack.enter_context(running_maskmail(backend, plan, sinks["maskmail"], say)),
                stack.enter_context(running_postfix(sinks["postfix"], say)),
            ]
            for system in systems:
                if plan.warmup:
                    measure(system, plan, plan.warmup, load_seed=1000)
            for rep in range(plan.reps):
                for system in systems:
                    fig = measure(system, plan, plan.messages, load_seed=rep)
                    results.setdefault((backend, system.name), []).append(fig)
                    say(
                        f"[{backend}] mail {system.name:8} #{rep + 1}: {fig.rate:7.0f} msg/s"
                        f"  p99 {fig.p99_ms:8.1f} ms  cpu {fig.cpu_ms:5.2f} ms/msg"
                        f"  pss {fig.pss_mb:6.1f} MB  rss {fig.rss_mb:6.1f} MB"
                        + (f"  ERRORS {fig.errors}" if fig.errors else "")
                    )
    return results
