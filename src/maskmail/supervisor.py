"""``maskmail smtp --workers N``: the mail plane as N processes on one port, kept at N by
a parent that does nothing else.

The parent opens the listening sockets (or takes those systemd passed), then forks the
workers, which share them; each takes its connections with ``mail/accepting.py``, so
that a burst spreads over them. One shared socket rather than one per
worker with SO_REUSEPORT, because systemd passes one socket per port (the workers would
share it then anyway), and because a connection waiting to be accepted when a worker
dies is taken by another worker, where SO_REUSEPORT would reset the connections queued
on the dead worker's socket.

Workers are forked, not started afresh: a killed one is replaced in milliseconds, and
they share the imported code's pages. The parent makes no database connection and runs
no event loop before forking, so a worker inherits none; workers share nothing but the
database (and Redis).
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from maskmail.config import Settings

log = logging.getLogger("maskmail")

# A worker that ends sooner than this after it started is replaced only after this long,
# so that one failing at start (the database down) does not keep the parent busy.
RESTART_PAUSE = 1.0
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_PR_SET_PDEATHSIG = 1


def default_workers() -> int:
    """One worker per core this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def prepare_metrics() -> None:
    """Make the workers' metrics add up, before anything creates a metric.

    prometheus_client chooses between per-process and shared values when it is first
    imported, from the environment: the directory must be named before that.
    """
    os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="maskmail-metrics-"))
    from maskmail.metrics import prepare_multiprocess

    prepare_multiprocess()


class Supervisor:
    """Keeps ``count`` workers running ``work`` until SIGTERM or SIGINT, which it passes on
    as SIGTERM to every worker (each drains, as a single ``smtp`` does) before it returns."""

    def __init__(self, count: int, work: Callable[[], None]) -> None:
        self.count = count
        self.work = work
        self.started: dict[int, float] = {}
        self.stopping = False

    def run(self) -> None:
        for signum in _STOP_SIGNALS:
            signal.signal(signum, self._stop)
        for _ in range(self.count):
            self._start()
        log.info("SMTP: %d workers started", self.count)
        while self.started:
            pid, status = os.wait()
            began = self.started.pop(pid, None)
            if began is None:
                continue
            _forget(pid)
            if self.stopping:
                continue
            log.warning("SMTP worker %d ended (%s); starting another", pid, _how(status))
            if time.monotonic() - began < RESTART_PAUSE:
                time.sleep(RESTART_PAUSE)
            if not self.stopping:
                self._start()
        log.info("SMTP: every worker stopped")

    def _stop(self, signum: int, _frame: object) -> None:
        if not self.stopping:
            log.info("SMTP: stopping the workers (%s)", signal.Signals(signum).name)
        self.stopping = True
        for pid in self.started:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue  # ended already; os.wait reaps it

    def _start(self) -> None:
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            os._exit(self._worker(parent))
        self.started[pid] = time.monotonic()

    def _worker(self, parent: int) -> int:
        """The body of a forked worker: its exit status."""
        # Its own process group: a Ctrl-C in the terminal reaches the parent alone, which
        # passes it on as SIGTERM (uvicorn cuts its drain short at a second SIGINT).
        os.setpgid(0, 0)
        for signum in _STOP_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        _end_with(parent)
        code = 0
        try:
            self.work()
        except BaseException:
            log.exception("SMTP worker %d failed", os.getpid())
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        return code


def _end_with(parent: int) -> None:
    """Have the kernel send this worker SIGTERM when the parent dies (killed, say): an
    orphan would serve the port unsupervised and keep a new ``smtp`` from binding it.
    Linux's prctl(PR_SET_PDEATHSIG); elsewhere nothing."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the call
        os.kill(os.getpid(), signal.SIGTERM)


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"


def _forget(pid: int) -> None:
    """Drop an ended worker's live gauges (pool use) from the sum the probes report."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]


def run_smtp_workers(
    settings: Settings, *, host: str, port: int, health_port: int | None, count: int
) -> None:
    """Open the ports, then run ``count`` workers on them until stopped."""
    prepare_metrics()
    from maskmail.mail.plane import open_listeners
    from maskmail.runner import run_loop, run_smtp
    from maskmail.startup import bind

    health = None
    if health_port is not None:
        health = bind(host, health_port, "the health probes", "--health-port")
        health.listen(socket.SOMAXCONN)
    listeners = open_listeners(settings, host=host, port=port)

    def work() -> None:
        main = run_smtp(
            settings,
            host=host,
            port=port,
            health_port=health_port,
            sockets=listeners,
            health_socket=health,
        )
        run_loop(main)

    Supervisor(count, work).run()
