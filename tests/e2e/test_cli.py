"""The `maskmail` command as an operator uses it, against a running server."""

from __future__ import annotations

import asyncio
import re
import subprocess
import time

import httpx
import pytest
from sqlalchemy import select

from maskmail.core.keys import PREFIX
from maskmail.store.engine import create_engine, transaction
from maskmail.store.tables import users
from tests.e2e.conftest import Deployment
from tests.support import free_port, maskmail_cmd, run_cli, running, wait_for_port

pytestmark = pytest.mark.slow


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_users_keys_and_revocation(deployment: Deployment) -> None:
    deployment.cli("user", "add", "Carol@Example.COM")
    out = deployment.cli("key", "create", "carol@example.com")
    assert out.count("\n") == 1
    key = out.strip()
    assert key.startswith(PREFIX)
    port = free_port()
    with running(deployment.env, "serve", "--port", str(port), port=port, log=deployment.tmp / "s"):
        url = f"http://127.0.0.1:{port}/v3/relay/addresses"
        headers = {"Authorization": f"Bearer {key}"}
        assert httpx.post(url, headers=headers).status_code == 200
        deployment.cli("key", "revoke", key)
        refused = httpx.get(url, headers=headers)
        assert refused.status_code == 401
        assert refused.json()["code"] == "unauthorized"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("user", "add", "not-an-address"), "not a valid email"),
        (("key", "create", "ghost@example.com"), "no such user"),
        (("key", "revoke", "mm_live_nothing"), "no live key"),
        (("serve", "--port", "notaport"), "--port"),
        (("frobnicate",), "No such command"),
    ],
)
def test_bad_arguments_exit_non_zero_with_one_line(
    deployment: Deployment, args: tuple[str, ...], fragment: str
) -> None:
    line = _one_line_error(run_cli(deployment.env, *args))
    assert line.startswith("maskmail: ") and fragment in line


def test_version_is_printed() -> None:
    from maskmail import __version__

    result = subprocess.run(
        maskmail_cmd("--version"), capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"maskmail {__version__}"


def test_duplicate_user_is_one_line(deployment: Deployment) -> None:
    deployment.cli("user", "add", "dup@example.com")
    assert "already exists" in _one_line_error(
        run_cli(deployment.env, "user", "add", "dup@example.com")
    )


def test_bad_setting_is_one_line(deployment: Deployment) -> None:
    env = {**deployment.env, "MASKMAIL_MAX_PAGE_SIZE": "zero"}
    assert "MASKMAIL_MAX_PAGE_SIZE" in _one_line_error(run_cli(env, "db", "upgrade"))


def test_up_demo_prints_a_working_curl_line_once(deployment: Deployment) -> None:
    port, smtp = free_port(), free_port()
    args = ("up", "--demo", "--api-port", str(port), "--smtp-port", str(smtp))
    log = deployment.tmp / "up.log"
    with running(deployment.env, *args, port=port, log=log):
        deadline = time.monotonic() + 10
        while "curl" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        found = re.search(r"^\s+(curl .+)$", log.read_text(), re.MULTILINE)
        assert found, log.read_text()
        result = subprocess.run(
            ["bash", "-c", found.group(1)], capture_output=True, text=True, timeout=30, check=False
        )
        assert result.returncode == 0, result.stderr
        created, listed = result.stdout.strip().split("\n")
        assert '"full_address"' in created
        assert '"count":1' in listed
    again = deployment.tmp / "up-again.log"
    with running(deployment.env, *args, port=port, log=again):
        assert "listening" in again.read_text() and "curl" not in again.read_text()


def test_up_runs_migrations_on_an_empty_database(deployment: Deployment) -> None:
    env = {**deployment.env, "MASKMAIL_DATA_DIR": str(deployment.tmp / "fresh")}
    del env["MASKMAIL_DATABASE_URL"]
    port = free_port()
    proc = subprocess.Popen(
        maskmail_cmd("up", "--api-port", str(port), "--smtp-port", str(free_port())),
        env={**__import__("os").environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        response = httpx.get(f"http://127.0.0.1:{port}/v3/relay/addresses")
        assert response.status_code == 401
        assert (deployment.tmp / "fresh" / "maskmail.db").exists()
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_show_name_choice(deployment: Deployment) -> None:
    deployment.cli("user", "add", "dora@example.com")

    async def shown() -> bool:
        engine = create_engine(deployment.env["MASKMAIL_DATABASE_URL"])
        try:
            async with transaction(engine, readonly=True) as conn:
                return bool(await conn.scalar(select(users.c.show_name)))
        finally:
            await engine.dispose()

    assert asyncio.run(shown()) is False
    deployment.cli("user", "show-name", "Dora@Example.com", "true")
    assert asyncio.run(shown()) is True
    deployment.cli("user", "show-name", "dora@example.com", "false")
    assert asyncio.run(shown()) is False
    line = _one_line_error(run_cli(deployment.env, "user", "show-name", "nobody@x.com", "true"))
    assert "nobody@x.com" in line
    _one_line_error(run_cli(deployment.env, "user", "show-name", "dora@example.com", "maybe"))
