"""``maskmail invite``: the link alone on stdout, one line on stderr, refusals as one line,
and MASKMAIL_SIGNUP refused unless it is one of its three values."""

from __future__ import annotations

import mailbox
import re
from pathlib import Path

import pytest

from tests.support import run_cli

# Each step starts a fresh interpreter.
pytestmark = pytest.mark.slow


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"MASKMAIL_DATA_DIR": str(tmp_path), "MASKMAIL_DOMAIN": "relay.example.com", **extra}


def test_create_list_revoke(tmp_path: Path) -> None:
    env = _env(tmp_path, MASKMAIL_SIGNUP="invite", MASKMAIL_PUBLIC_URL="https://mm.example/app/")
    assert run_cli(env, "db", "upgrade").returncode == 0
    made = run_cli(env, "invite", "create", "--expires", "12h")
    assert made.returncode == 0, made.stderr
    assert re.fullmatch(r"https://mm\.example/app/sign-up\?invite=mmi_[\w-]{43}\n", made.stdout)
    assert made.stderr.strip() == "made invitation 1, good for 12h"
    listed = run_cli(env, "invite", "list")
    assert listed.returncode == 0
    assert re.fullmatch(r"1\topen\tmade .* UTC\texpires .* UTC\n", listed.stdout)
    assert made.stdout.strip() not in listed.stdout + listed.stderr
    revoked = run_cli(env, "invite", "revoke", "1")
    assert revoked.returncode == 0 and revoked.stderr.strip() == "revoked invitation 1"
    assert "\trevoked\t" in run_cli(env, "invite", "list").stdout
    unknown = run_cli(env, "invite", "revoke", "7")
    assert unknown.returncode == 1 and unknown.stderr == "maskmail: no such invitation\n"


def test_a_closed_server_is_told_of(tmp_path: Path) -> None:
    env = _env(tmp_path)
    assert run_cli(env, "db", "upgrade").returncode == 0
    made = run_cli(env, "invite", "create")
    assert made.returncode == 0
    assert made.stdout.startswith("https://relay.example.com/sign-up?invite=mmi_")
    assert "MASKMAIL_SIGNUP is closed" in made.stderr


def test_create_mails_the_link_once(tmp_path: Path) -> None:
    env = _env(tmp_path, MASKMAIL_SIGNUP="invite", MASKMAIL_PUBLIC_URL="https://mm.example/")
    assert run_cli(env, "db", "upgrade").returncode == 0
    made = run_cli(env, "invite", "create", "--expires", "2d", "--email", "pal@example.org")
    assert made.returncode == 0, made.stderr
    assert made.stderr.strip() == "made invitation 1, mailed, good for 2d"
    assert "pal@example.org" not in made.stdout + made.stderr
    (message,) = list(mailbox.Maildir(tmp_path / "outbox", create=False))
    assert message["To"] == "pal@example.org" and message["From"] == "accounts@relay.example.com"
    assert message.get_content_type() == "text/plain" and not message.is_multipart()
    body = message.get_payload(decode=True)
    assert isinstance(body, bytes) and made.stdout.strip() in body.decode()
    assert "\topen\t" in run_cli(env, "invite", "list").stdout


@pytest.mark.parametrize(
    "email", ["me@relay.example.com", "x@mail.relay.example.com", "not-an-address"]
)
def test_a_refused_address_makes_no_invitation(tmp_path: Path, email: str) -> None:
    env = _env(tmp_path, MASKMAIL_SIGNUP="invite")
    assert run_cli(env, "db", "upgrade").returncode == 0
    refused = run_cli(env, "invite", "create", "--email", email)
    assert refused.returncode == 1 and refused.stdout == ""
    assert len(refused.stderr.splitlines()) == 1 and refused.stderr.startswith("maskmail: ")
    assert "mmi_" not in refused.stderr
    listed = run_cli(env, "invite", "list")
    assert listed.stdout == "" and listed.stderr.strip() == "0 invitations"
    assert not (tmp_path / "outbox").exists() or not any((tmp_path / "outbox").rglob("*,*"))


@pytest.mark.parametrize("expires", ["7", "2y", "0m", "91d"])
def test_a_bad_duration_is_one_line(tmp_path: Path, expires: str) -> None:
    result = run_cli(_env(tmp_path), "invite", "create", "--expires", expires)
    assert result.returncode == 1 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert re.match(r"maskmail: (not a duration|an invitation must expire)", result.stderr)


@pytest.mark.parametrize("command", [("doctor",), ("invite", "create"), ("db", "upgrade")])
def test_an_unknown_signup_mode_is_refused(tmp_path: Path, command: tuple[str, ...]) -> None:
    result = run_cli(_env(tmp_path, MASKMAIL_SIGNUP="sometimes"), *command)
    assert result.returncode == 2
    assert result.stderr == (
        "maskmail: invalid setting: MASKMAIL_SIGNUP: Input should be 'closed', 'invite' or 'open'\n"
    )
