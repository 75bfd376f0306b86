"""The log formats: one JSON object a line, the id of the task's request or message, no secrets."""

from __future__ import annotations

import asyncio
import json
import logging
import sys

import pytest
import uvicorn
from pydantic import ValidationError

from maskmail import logs
from maskmail.config import Settings

KEY = "mm_live_" + "A1b2-C3_d4" * 4


def record(message: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("maskmail.test", logging.INFO, __file__, 1, message, args, None)


def test_redactor_keeps_relay_addresses_and_removes_the_rest() -> None:
    redact = logs.Redactor("relay.test")
    line = redact(
        f"550 <Owner@Example.com> refused; via abc@relay.test and x@sub.relay.test; key {KEY}"
    )
    assert "Owner@Example.com" not in line and "example.com" not in line.lower()
    assert "abc@relay.test" in line and "x@sub.relay.test" in line
    assert KEY not in line and "mm_live_<redacted>" in line
    # A domain that merely ends like the relay domain is someone else's.
    assert "a@evilrelay.test" not in redact("from a@evilrelay.test")


def test_redactor_removes_an_internationalised_mailbox_whole() -> None:
    # The mail plane takes SMTPUTF8: an owner's mailbox may be at a non-ASCII domain, and
    # no part of it, the domain included, may stay in the line.
    line = logs.Redactor("relay.test")("owner jörg@bücher.example refused; via abc@relay.test")
    assert "bücher" not in line and "ücher" not in line and "jörg" not in line
    assert "abc@relay.test" in line


def test_redactor_removes_quoted_local_parts_and_address_literals() -> None:
    redact = logs.Redactor("relay.test")
    line = redact('to "alice smith"@example.com, "a\\"b"@example.org and bob@[192.0.2.7]')
    assert "alice" not in line and "smith" not in line and "example" not in line
    assert "bob" not in line and "192.0.2.7" not in line
    assert line.count(logs.REDACTED) == 3
    assert redact('"x y"@relay.test') == '"x y"@relay.test'


def test_json_line_redacts_a_quoted_local_part_its_escapes_would_hide() -> None:
    formatter = logs.JsonFormatter(logs.Redactor("relay.test"))
    line = json.loads(formatter.format(record('refused "alice smith"@example.com')))
    assert "alice" not in line["event"] and logs.REDACTED in line["event"]


def test_json_line_has_time_level_event_and_the_bound_id() -> None:
    formatter = logs.JsonFormatter(logs.Redactor("relay.test"))

    async def in_task() -> tuple[str, str]:
        logs.bind("message_id")
        bound = logs.current()
        assert bound is not None and bound[0] == "message_id"
        line = formatter.format(record("sent %s to %s", "x@relay.test", "me@home.example"))
        return bound[1], line

    ident, line = asyncio.run(in_task())
    parsed = json.loads(line)
    assert parsed["message_id"] == ident
    assert parsed["level"] == "info" and parsed["logger"] == "maskmail.test"
    assert parsed["event"] == "sent x@relay.test to <redacted>"
    assert parsed["time"].endswith("Z")
    # The id belonged to that task only.
    assert "message_id" not in json.loads(formatter.format(record("outside")))


def test_exception_stays_on_one_line() -> None:
    formatter = logs.JsonFormatter(logs.Redactor("relay.test"))
    try:
        raise ValueError("bad\nthing for owner@example.com")
    except ValueError:
        failed = record("failed")
        failed.exc_info = sys.exc_info()
    line = formatter.format(failed)
    assert "\n" not in line
    assert "ValueError" in json.loads(line)["exception"] and "owner@example.com" not in line


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_configure_holds_chatty_libraries_above_debug(
    fmt: logs.LogFormat, capsys: pytest.CaptureFixture[str]
) -> None:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        logs.configure(level="debug", fmt=fmt, relay_domain="relay.test")
        logging.getLogger("mail.log").info("RCPT owner@example.com")
        logging.getLogger("aiosqlite").debug("executing with owner@example.com")
        logging.getLogger("maskmail.x").debug("shown at debug")
        err = capsys.readouterr().err
        assert "owner@example.com" not in err and "RCPT" not in err and "executing" not in err
        assert "shown at debug" in err
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        logging.captureWarnings(False)


def test_level_is_info_unless_maskmail_log_level_says_otherwise(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MASKMAIL_LOG_LEVEL", raising=False)
    assert Settings().log_level == "info"
    monkeypatch.setenv("MASKMAIL_LOG_LEVEL", " WARNING ")
    settings = Settings()
    monkeypatch.setenv("MASKMAIL_LOG_LEVEL", "loud")
    with pytest.raises(ValidationError):
        Settings()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        logs.configure(level=settings.log_level, fmt="json", relay_domain="relay.test")
        logging.getLogger("maskmail.x").info("not at warning")
        logging.getLogger("uvicorn.error").info("nor uvicorn's")
        logging.getLogger("maskmail.x").warning("shown at warning")
        lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        logging.captureWarnings(False)
    assert [(line["level"], line["event"]) for line in lines] == [("warning", "shown at warning")]


@pytest.mark.parametrize("access_log", [False, True])
def test_the_access_log_is_as_uvicorn_was_told_after_a_worker_configures_logging(
    access_log: bool,
) -> None:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    access = logging.getLogger("uvicorn.access")
    try:
        logs.configure(level="info", fmt="text", relay_domain="relay.test")  # the command
        uvicorn.Config("maskmail.asgi:app_from_env", access_log=access_log, log_config=None)
        logs.configure(level="info", fmt="text", relay_domain="relay.test")  # the factory
        # uvicorn's protocol logs a line per request when this logger has a handler.
        assert access.hasHandlers() is access_log
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        access.propagate = True
        logging.captureWarnings(False)
