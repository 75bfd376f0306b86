"""deploy/Containerfile, built and run: the image holds maskmail installed from uv.lock,
runs as an unprivileged user, keeps no build secret, and ``maskmail up`` in it makes an
address over HTTP and forwards a message over SMTP."""

from __future__ import annotations

import json
import smtplib
import socket
import subprocess
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import containers
from tests.sink import HOST, Sink
from tests.support import free_port, wait_for_port

pytestmark = pytest.mark.slow
ROOT = Path(__file__).parents[2]
CONTAINERFILE = ROOT / "deploy" / "Containerfile"
TAG = "localhost/maskmail-test:latest"
API_PORT = 8000  # the port the image's health check and EXPOSE name


@pytest.fixture(scope="module")
def image() -> Iterator[dict[str, Any]]:
    missing = containers.missing_tools()
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (scripts/system-deps.sh installs them)")
    started = time.monotonic()
    containers.build(CONTAINERFILE, TAG)
    print(f"image built in {time.monotonic() - started:.0f} s")
    yield containers.inspect(TAG)


def _installed(name: str) -> dict[str, str]:
    listing = "import json, importlib.metadata as m; print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"  # noqa: E501
    shown = subprocess.run(
        containers.run_command(name, ["python3", "-c", listing]),
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    found: dict[str, str] = json.loads(shown.stdout)
    return found


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def test_the_image_is_the_lock_run_by_an_unprivileged_user(image: dict[str, Any]) -> None:
    assert image["User"] == "maskmail"
    assert image["Entrypoint"] == ["maskmail"]
    assert image["Cmd"][0] == "up"
    assert f"{API_PORT}/tcp" in image["ExposedPorts"]
    assert f"http://127.0.0.1:{API_PORT}/healthz" in " ".join(image["Healthcheck"]["Test"])
    assert not [e for e in image["Env"] if "SSL_CERT" in e or "PIP_CERT" in e]
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    # A package may be locked at several versions, one for each range of Python.
    locked = {(_normal(p["name"]), p["version"]) for p in lock["package"]}
    with containers.container(TAG) as name:
        installed = {_normal(k): v for k, v in _installed(name).items()}
        whoami = subprocess.run(
            containers.run_command(name, ["sh", "-c", "id -u; ls -A /run/secrets 2>&1; true"]),
            capture_output=True, text=True, timeout=120, check=True,
        ).stdout.split("\n", 1)  # fmt: skip
    assert whoami[0] != "0"
    assert "No such file" in whoami[1]  # the build's certificate bundle is not kept
    assert {"maskmail", "fastapi", "sqlalchemy", "aiosmtpd", "uvicorn"} <= installed.keys()
    # Every installed distribution at the lock's version; no development tool.
    assert set(installed.items()) - locked == set()
    assert not {"pytest", "mypy", "ruff"} & installed.keys()


def _health(name: str, port: int, test: list[str]) -> int:
    """The image's health check, run in the container with the API on ``port``."""
    argv = [arg.replace(f":{API_PORT}/", f":{port}/") for arg in test[1:]]
    done = subprocess.run(
        containers.run_command(name, argv), capture_output=True, timeout=120, check=False
    )
    return done.returncode


def test_up_in_the_image_makes_an_address_and_forwards_mail(
    image: dict[str, Any], sink: Sink, tmp_path: Path
) -> None:
    api_port, smtp_port = free_port(), free_port()
    env = {"MASKMAIL_DOMAIN": "relay.test", "MASKMAIL_SMARTHOST": f"{HOST}:{sink.port}"}
    # The image's command, on loopback ports of this test rather than 0.0.0.0.
    command = [*image["Entrypoint"], image["Cmd"][0], "--host", HOST]
    command += ["--api-port", str(api_port), "--smtp-port", str(smtp_port)]
    with containers.container(TAG) as name:
        assert _health(name, api_port, image["Healthcheck"]["Test"]) != 0  # nothing serves
        with containers.running(name, command, env, tmp_path / "up.log"):
            wait_for_port(api_port)
            wait_for_port(smtp_port)
            cli = [*image["Entrypoint"]]
            for args in (
                ["user", "add", "owner@owners.example"],
                ["key", "create", "owner@owners.example"],
            ):
                made = subprocess.run(
                    containers.run_command(name, [*cli, *args], env),
                    capture_output=True, text=True, timeout=300, check=False,
                )  # fmt: skip
                assert made.returncode == 0, made.stderr
            key = made.stdout.strip()
            with httpx.Client(
                base_url=f"http://{HOST}:{api_port}", headers={"Authorization": f"Bearer {key}"}
            ) as api:
                created = api.post("/v3/relay/addresses")
                assert created.status_code == 200, created.text
                address = created.json()["full_address"]
                message = f"From: alice@sender.example\r\nTo: {address}\r\n\r\nHi.\r\n"
                with smtplib.SMTP(HOST, smtp_port, timeout=30) as client:
                    client.sendmail("alice@sender.example", [address], message)
                deadline = time.monotonic() + 60
                while not sink.messages and time.monotonic() < deadline:
                    time.sleep(0.2)
                counted = api.get(f"/v3/relay/addresses/{created.json()['id']}").json()
            healthy = _health(name, api_port, image["Healthcheck"]["Test"])
        log = (tmp_path / "up.log").read_text(errors="replace")
    assert healthy == 0, log
    [forward] = sink.messages
    assert forward.rcpt_tos == ["owner@owners.example"], log
    assert f"To: {address}" in forward.data.decode()
    assert counted["num_forwarded"] == 1
    # Stopping the container stopped the server in it.
    with socket.socket() as probe:
        assert probe.connect_ex((HOST, api_port)) != 0


@pytest.mark.parametrize("part", ["postfix", "rspamd"])
def test_the_compose_files_postfix_and_rspamd_images_build(
    image: dict[str, Any], part: str
) -> None:
    """Their Containerfiles build (rspamd's runs ``rspamadm configtest``); Postfix's
    entrypoint writes a configuration ``postfix check`` passes, aimed at the services of
    deploy/compose.yaml."""
    tag = f"localhost/maskmail-{part}-test:latest"
    containers.build(ROOT / "deploy" / part / "Containerfile", tag)
    if part == "rspamd":
        assert containers.inspect(tag)["Cmd"][0] == "rspamd"
        return
    settings = {
        "RELAY_DOMAIN": "relay.test",
        "MAIL_HOSTNAME": "mx.test",
        "MAIL_NETWORKS": "172.29.25.0/24",
    }
    shell = [*containers.inspect(tag)["Entrypoint"], "sh", "-c", "postconf -n; postconf -M"]
    with containers.container(tag) as name:
        shown = subprocess.run(
            containers.run_command(name, shell, settings),
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    conf = shown.stdout
    assert "relay_domains = relay.test, socketmap:inet:smtp:10027:domains" in conf
    assert "maskmail_milters = inet:rspamd:11332" in conf
    assert "maskmail:[smtp]:2525" in conf and "myhostname = mx.test" in conf
    assert "10025      inet" in conf and "-o mynetworks=172.29.25.0/24" in conf
    # No peer is on the container's own loopback.
    assert "inet:127.0.0.1" not in conf and "[127.0.0.1]" not in conf
    assert "STARTTLS is not offered" in shown.stderr
