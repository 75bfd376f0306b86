"""Private shapes the mail plane relies on fail here first when a release changes them:
the email package's field list, which ``reply_headers.set_fields`` replaces in one step,
and the two aiosmtpd methods ``server.RelaySMTP`` overrides (pyproject.toml bounds aiosmtpd)."""

from __future__ import annotations

import email.message
import inspect
import tomllib
from email import message_from_bytes, policy
from pathlib import Path

import aiosmtpd.smtp
from packaging.requirements import Requirement

from maskmail.mail.reply_headers import set_fields


def test_a_message_keeps_its_fields_in_one_list_named_headers() -> None:
    source = inspect.getsource(email.message.Message)
    assert "self._headers = []" in source
    assert "for k, v in self._headers" in source


def test_set_fields_replaces_every_field_and_keeps_repeats_in_order() -> None:
    msg = message_from_bytes(
        b"Message-ID: <a@x>\r\nSubject: s\r\nMessage-ID: <b@x>\r\n\r\nbody\r\n",
        policy=policy.SMTP,
    )
    set_fields(msg, [("Message-ID", "<c@y>"), ("Message-ID", "<d@y>"), ("X-One", "1")])
    assert msg.get_all("Message-ID") == ["<c@y>", "<d@y>"]
    assert msg.keys() == ["Message-ID", "Message-ID", "X-One"]
    assert b"Subject" not in msg.as_bytes()


def test_aiosmtpd_still_calls_the_two_private_methods_relay_smtp_overrides() -> None:
    # mail/server.py's RelaySMTP overrides these: renamed or no longer called, the idle
    # client gets no 421 line and a CR in an address goes to aiosmtpd's own parser.
    source = inspect.getsource(aiosmtpd.smtp.SMTP)
    assert "self._timeout_cb" in source
    assert "def _timeout_cb(self)" in source
    assert "= self._getaddr(arg)" in source
    assert "def _getaddr(self, arg: str)" in source


def test_every_library_whose_private_shape_is_used_has_an_upper_bound() -> None:
    # SQLAlchemy: its asyncpg adapter's _execute_mutex and its aiosqlite adapter's shape
    # (tests/store/test_library_internals.py); aiosmtpd: the two methods above.
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    bounds = {
        Requirement(line).name: Requirement(line).specifier
        for line in project["project"]["dependencies"]
    }
    for name in ("sqlalchemy", "aiosmtpd"):
        assert any(spec.operator in {"<", "<=", "=="} for spec in bounds[name]), name
