"""The process's logging: one format for every line, an id per request or message, no secrets.

``configure`` is called once by each process entry point (the ``maskmail`` command, and
the app factory uvicorn's worker processes import); importing maskmail configures nothing.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import secrets
import sys
import time
from contextvars import ContextVar
from typing import Literal

LogFormat = Literal["text", "json"]

# Libraries that name envelope addresses, SQL parameters or message lines in their own
# records: held at this level whatever MASKMAIL_LOG_LEVEL says.
QUIET_LIBRARIES = {
    "mail.log": logging.WARNING,  # aiosmtpd: every sender and recipient at INFO, lines at DEBUG
    "aiosqlite": logging.INFO,  # each statement with its parameters at DEBUG
    "flufl.bounce": logging.WARNING,  # each of its detectors, and what it found, per bounce
    "httpcore": logging.INFO,
    # Every step of every start's migration check; a failed migration raises all the same,
    # and a start-up failure stays the one line on stderr.
    "alembic": logging.WARNING,
}

# Which request (API) or message (SMTP) the current task works for: ("request_id", n).
# The number becomes text only when a line is written: most requests log nothing.
_trace: ContextVar[tuple[str, int] | None] = ContextVar("maskmail_trace", default=None)

KEY = re.compile(r"mm_live_[A-Za-z0-9_-]+")
# A local part is a run of atom characters or a quoted string (RFC 5321). A domain is an
# address literal, never the relay's, or a name in any script (\w is Unicode): an
# ASCII-only class would stop at the first other letter and leave the rest in the line.
MAILBOX = re.compile(
    r"(?:\"(?:[^\"\\\r\n]|\\.)*\"|[^\s<>\"'(),;:@\[\]\\]+)"
    r"@(\[[^\]\s]*\]|[\w-]+(?:\.[\w-]+)*)"
)
REDACTED = "<redacted>"


# Ids are this process's random prefix and a count: unique across processes, and
# cheaper per request than fresh random bytes.
_PREFIX = secrets.token_hex(4)
_next = itertools.count(1)


def bind(kind: Literal["request_id", "message_id"]) -> None:
    """Give the current task (and every line it logs from now on) a new id."""
    _trace.set((kind, next(_next)))


def current() -> tuple[str, str] | None:
    """The id the current task logs under, if any: its kind and its text."""
    trace = _trace.get()
    return None if trace is None else (trace[0], f"{_PREFIX}-{trace[1]:x}")


class Redactor:
    """Removes API keys and every mailbox outside the relay domain from a finished line.

    maskmail's own lines name address ids, not addresses; this is the net under the lines
    other code writes (a smarthost's reply text, a driver's error, a traceback).
    """

    def __init__(self, relay_domain: str) -> None:
        self.relay_domain = relay_domain.lower()

    def _mailbox(self, found: re.Match[str]) -> str:
        domain = found.group(1).lower()
        if domain == self.relay_domain or domain.endswith("." + self.relay_domain):
            return found.group(0)
        return REDACTED

    def __call__(self, line: str) -> str:
        if "mm_live_" in line:
            line = KEY.sub("mm_live_" + REDACTED, line)
        if "@" in line:
            line = MAILBOX.sub(self._mailbox, line)
        return line


class TextFormatter(logging.Formatter):
    def __init__(self, redact: Redactor) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s%(trace)s: %(message)s")
        self.redact = redact

    def format(self, record: logging.LogRecord) -> str:
        trace = current()
        record.trace = f" [{trace[1]}]" if trace else ""
        return self.redact(super().format(record))


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, event, and the request or message id."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__()
        self.redact = redact

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        trace = current()
        if trace:
            line[trace[0]] = trace[1]
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        # Redacted before encoding: JSON's escapes (\" in a quoted local part) would hide
        # an address from the pattern.
        for field in ("event", "exception"):
            if field in line:
                line[field] = self.redact(str(line[field]))
        return json.dumps(line, ensure_ascii=False, default=str)


def configure(*, level: str, fmt: LogFormat, relay_domain: str) -> None:
    """Send every logger's lines to stderr in one format; safe to call again."""
    redact = Redactor(relay_domain)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(redact) if fmt == "json" else TextFormatter(redact))
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(level.upper())
    # uvicorn's loggers keep their own handlers unless told otherwise: ours carry them.
    # Except whether the access log propagates: uvicorn's access_log option turns it off,
    # and each worker's app factory runs this after uvicorn did (a line per request).
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        if name != "uvicorn.access":
            logger.propagate = True
    for name, floor in QUIET_LIBRARIES.items():
        logging.getLogger(name).setLevel(max(floor, root.level))
    logging.captureWarnings(True)
