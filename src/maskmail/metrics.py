"""What Prometheus scrapes: HTTP requests, mail outcomes, smarthost latency, pool use.

Every process keeps its own values; under ``serve --workers N`` they go to files in
``PROMETHEUS_MULTIPROC_DIR`` (set by the ``serve`` command), and a scrape of any worker
adds up all of them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST

# Requests take a few milliseconds; a scrape should still show a slow tail.
HTTP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
http_requests = Histogram(
    "maskmail_http_request_duration_seconds",
    "HTTP requests by method, route template and status, with their latency.",
    ["method", "route", "status"],
    buckets=HTTP_BUCKETS,
)
mail_outcomes = Counter(
    "maskmail_mail_messages_total",
    "Messages by what became of them: forwarded, blocked, spam, replied, dropped, "
    "bounced (a delivery report taken), deferred (4xx to the sender), refused (5xx).",
    ["outcome"],
)
# Every metric here has a label: in multiprocess mode an unlabelled one writes its file
# when it is declared, at import, before ``serve --workers`` has made the directory.
mail_counts_pending = Gauge(
    "maskmail_mail_counts_pending",
    "Delivered messages whose counts could not be written to the database yet, "
    "and are being retried, by plane.",
    ["plane"],
    multiprocess_mode="livesum",
)
smarthost_seconds = Histogram(
    "maskmail_smarthost_seconds",
    "Time the smarthost took to take (or refuse) one message.",
    ["result"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)
pool_checked_out = Gauge(
    "maskmail_db_pool_checked_out",
    "Database connections in use, by plane.",
    ["plane"],
    multiprocess_mode="livesum",
)
pool_size = Gauge(
    "maskmail_db_pool_size",
    "Database connections a pool keeps, by plane.",
    ["plane"],
    multiprocess_mode="livesum",
)


def watch_pool(engine: AsyncEngine, plane: str) -> None:
    """Keep the pool gauges true as connections are taken and given back."""
    in_use = pool_checked_out.labels(plane)
    pool = engine.sync_engine.pool
    size = getattr(pool, "size", None)
    if callable(size):
        pool_size.labels(plane).inc(size())
    event.listen(pool, "checkout", lambda *_: in_use.inc())
    event.listen(pool, "checkin", lambda *_: in_use.dec())


def render() -> bytes:
    """The exposition text: this process's values, or all workers' in multiprocess mode."""
    if os.environ.get(MULTIPROC_ENV):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry)
    return generate_latest(REGISTRY)


def prepare_multiprocess() -> Path:
    """An empty directory for the workers' values, named in the environment they inherit."""
    given = os.environ.get(MULTIPROC_ENV)
    path = Path(given) if given else Path(tempfile.mkdtemp(prefix="maskmail-metrics-"))
    if given:
        # Values a previous run left would be added to this run's.
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    os.environ[MULTIPROC_ENV] = str(path)
    return path


def process_exited() -> None:
    """Drop a stopping worker's live gauges from the sum."""
    if os.environ.get(MULTIPROC_ENV):
        multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]
