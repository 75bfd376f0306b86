"""Scale-out of the mail plane: ``maskmail smtp --workers N`` on one PostgreSQL database.

One database is seeded as bench/mail.py seeds it (100 users with 10 addresses each); for
every count N one ``maskmail smtp --workers N`` runs on it, side by side, all relaying to
one bench.mail_sink. Each measurement is bench.mail's: bench.mail_load sends the messages
over a few persistent connections, and the sink says when each arrived and to whom. A
message refused, lost, misrouted or delivered twice is an error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support import free_port, wait_for_port

from bench import mail, seed
from bench import scale_out_cpu as cpu
from bench.api import stderr
from bench.lab import VENV_BIN, Server, database, run, system_env

MAIL_PARTS = ["maskmail", "PostgreSQL", "pgbouncer", "load", "sink"]
WARMUP = 200


@dataclass(frozen=True)
class MailRun:
    counts: list[int]
    messages: int
    connections: int
    size: int
    reps: int


def server_roots(server: Server) -> Callable[[], list[int]]:
    return lambda: [server.proc.pid]


@contextmanager
def mail_servers(
    counts: list[int], env: dict[str, str], work: Path, sink: mail.Sink
) -> Iterator[dict[int, mail.Running]]:
    started: dict[int, mail.Running] = {}
    with ExitStack() as stack:
        for n in counts:
            port = free_port()
            cmd = [str(VENV_BIN / "maskmail"), *mail.smtp_args(n), "--port", str(port)]
            server = Server(f"smtp-{n}", cmd, env, port, work / f"smtp-{n}.log")
            stack.callback(server.stop)
            wait_for_port(port, server.proc)
            started[n] = mail.Running(f"maskmail-{n}", port, sink, server_roots(server))
        yield started


def measure(
    system: mail.Running, plan: mail.MailPlan, readings: dict[str, cpu.Reading], rep: int
) -> cpu.Sample:
    window = cpu.Window(readings)
    fig = mail.measure(system, plan, plan.messages, load_seed=rep)
    busy, shares, seconds = window.close()
    errors = fig.errors + system.sink.duplicates
    delivered = plan.messages - fig.errors
    return cpu.Sample(fig.rate, fig.p50_ms, fig.p99_ms, errors, busy, shares, seconds, delivered)


def run_mail_scale_out(spec: MailRun, work: Path, via: str) -> list[str]:
    """The table's rows, then the database's relations after the run."""
    results: dict[tuple[str, int], list[cpu.Sample]] = {}
    with (
        database("postgres", work, "scale-out-mail") as db,
        cpu.pool(db, work, via) as pooled,
        ExitStack() as stack,
    ):
        env = system_env(db)
        run([str(VENV_BIN / "maskmail"), "db", "upgrade"], env)
        seed.load_maskmail(db, [mail.ADDRESSES_PER_USER] * mail.USERS)
        sink = mail.Sink(work / "sink.log")
        stack.callback(sink.stop)
        env |= {"MASKMAIL_DATABASE_URL": pooled.url, "MASKMAIL_SMARTHOST": f"127.0.0.1:{sink.port}"}
        running = stack.enter_context(mail_servers(spec.counts, env, work, sink))
        plans = {
            n: mail.MailPlan(
                ["postgres"], spec.messages, spec.connections, spec.size, spec.reps, 0, work, n
            )
            for n in spec.counts
        }
        for n, system in running.items():
            mail.measure(system, plans[n], min(WARMUP, spec.messages), load_seed=1000)
        for rep in range(spec.reps):
            for n, system in running.items():
                readings = {
                    "maskmail": cpu.tree_reading(system.roots()),
                    "PostgreSQL": cpu.postgres_reading(db),
                    "load": cpu.waited_children,
                    "sink": cpu.tree_reading([sink.proc.pid]),
                }
                if pooled.pgbouncer is not None:
                    readings["pgbouncer"] = pooled.pgbouncer
                sample = measure(system, plans[n], readings, rep)
                results.setdefault(("smtp", n), []).append(sample)
                stderr(f"[scale-out] mail {n} processes #{rep + 1}: {cpu.said(sample)}")
        sizes = cpu.relation_sizes(db)
    return [*cpu.table("plane", "msg", cpu.parts_for(MAIL_PARTS, via), results), "", *sizes]
