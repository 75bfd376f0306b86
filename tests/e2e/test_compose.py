"""deploy/compose.yaml, checked without a container engine: docker-compose validates it
and resolves its settings, and each service agrees with the Containerfiles, the files
of deploy/postfix and deploy/rspamd, the maskmail commands and docs/deploy.md."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests import containers
from tests.support import maskmail_cmd

ROOT = Path(__file__).parents[2]
DEPLOY = ROOT / "deploy"
EXAMPLE = DEPLOY / "compose.env.example"
MASKMAIL_SERVICES = ("migrate", "api", "smtp")
pytestmark = pytest.mark.slow  # each maskmail command line is parsed by the real CLI


def _config(env_file: Path) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("docker-compose")
    if tool is None:
        raise RuntimeError("docker-compose is required (scripts/system-deps.sh installs it)")
    return subprocess.run(
        [tool, "--env-file", str(env_file), "-f", str(DEPLOY / "compose.yaml"), "config"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def resolved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The compose file as docker-compose resolves it with the example's settings."""
    env = tmp_path_factory.mktemp("compose") / ".env"
    env.write_text(EXAMPLE.read_text().replace("POSTGRES_PASSWORD=\n", "POSTGRES_PASSWORD=pw1\n"))
    done = _config(env)
    assert done.returncode == 0, done.stderr
    loaded: dict[str, Any] = yaml.safe_load(done.stdout)
    return loaded


def _option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def _ports(service: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(host address, published, container port)`` of each port a service publishes."""
    found = []
    for port in service["ports"]:
        if isinstance(port, dict):
            found.append((port.get("host_ip", ""), str(port["published"]), str(port["target"])))
        else:
            *host, published, target = str(port).split(":")
            found.append(("".join(host), published, target.removesuffix("/tcp")))
    return found


def _accepted(*args: str) -> bool:
    """Whether ``maskmail ARGS`` parses (``--help`` after them: unknown options fail)."""
    done = subprocess.run(maskmail_cmd(*args, "--help"), capture_output=True, timeout=120)
    return done.returncode == 0


def test_the_example_settings_are_required_and_used(tmp_path: Path) -> None:
    # Without a database password the file refuses to start anything.
    refused = _config(EXAMPLE)
    assert refused.returncode != 0 and "set POSTGRES_PASSWORD" in refused.stderr
    text = (DEPLOY / "compose.yaml").read_text()
    used = set(re.findall(r"\$\{([A-Z_]+)", text))
    example = set(re.findall(r"^([A-Z_]+)=", EXAMPLE.read_text(), re.M))
    assert used == example - {"COMPOSE_PROJECT_NAME"}
    assert "deploy/.env" in (ROOT / ".gitignore").read_text().splitlines()


def test_every_service_agrees_with_the_images_and_ports(resolved: dict[str, Any]) -> None:
    services = resolved["services"]
    assert set(services) == {
        *MASKMAIL_SERVICES,
        "domains",
        "postfix",
        "rspamd",
        "postgres",
        "redis",
    }
    containerfile = (DEPLOY / "Containerfile").read_text()
    [health_port] = re.findall(r"HEALTHCHECK.*\n.*127\.0\.0\.1:(\d+)/healthz", containerfile)
    exposed = re.findall(r"^EXPOSE (.*)$", containerfile, re.M)[0].split()
    for name in MASKMAIL_SERVICES:
        service = services[name]
        assert service["build"] == {"context": str(ROOT), "dockerfile": "deploy/Containerfile"}
        assert service["image"] == services["api"]["image"]
        assert _accepted(*service["command"]), service["command"]
    # The hourly domain check: the image's maskmail, with the same settings.
    domains = services["domains"]
    assert domains["image"] == services["api"]["image"]
    assert domains["environment"] == services["smtp"]["environment"]
    [loop] = re.findall(r"do maskmail ([a-z ]+); sleep (\d+)", domains["entrypoint"][-1])
    assert _accepted(*loop[0].split()) and int(loop[1]) <= 3600
    api, smtp = services["api"], services["smtp"]
    # The API: its port is the one the image checks and the one published for nginx.
    port = _option(api["command"], "--port")
    assert port == health_port and port in exposed
    assert "healthcheck" not in api
    assert _ports(api) == [("127.0.0.1", port, port)]
    # The mail plane: its health check is the image's, on its health port.
    smtp_health = _option(smtp["command"], "--health-port")
    image_test = re.findall(r"CMD (\[.*\])", containerfile)[0]
    assert smtp["healthcheck"]["test"] == [
        "CMD", *yaml.safe_load(image_test.replace(f":{health_port}/", f":{smtp_health}/"))
    ]  # fmt: skip
    env = smtp["environment"]
    assert {name: services[name]["environment"] for name in MASKMAIL_SERVICES} == {
        name: env for name in MASKMAIL_SERVICES
    }
    main_cf = (DEPLOY / "postfix" / "main.cf").read_text()
    master_cf = (DEPLOY / "postfix" / "master.cf").read_text()
    proxy = (DEPLOY / "rspamd" / "local.d" / "worker-proxy.inc").read_text()
    # Postfix hands mail to the smtp service on the ports its files name, and takes the
    # forwards on the port maskmail's smarthost setting names.
    postfix = services["postfix"]
    assert postfix["environment"]["MASKMAIL_HOST"] == "smtp"
    assert f"[127.0.0.1]:{_option(smtp['command'], '--port')}" in main_cf
    assert f"inet:127.0.0.1:{env['MASKMAIL_POLICY_PORT']}" in main_cf
    smarthost = env["MASKMAIL_SMARTHOST"].split(":")
    assert smarthost[0] == "postfix" and f"127.0.0.1:{smarthost[1]} inet" in master_cf
    assert postfix["environment"]["RSPAMD_HOST"] == "rspamd"
    milter = re.findall(r'bind_socket = "127\.0\.0\.1:(\d+)"', proxy)[0]
    assert f"inet:127.0.0.1:{milter}" in main_cf
    assert _ports(postfix) == [("", "25", "25")]
    assert {name for name, service in services.items() if "ports" in service} == {"api", "postfix"}
    # Who is trusted: Postfix's network for the verdict headers, its gateway (the host's
    # nginx) for X-Forwarded-For; the same network Postfix lets hand it forwards.
    [network] = resolved["networks"]["mail"]["ipam"]["config"]
    assert env["MASKMAIL_TRUSTED_RELAYS"] == postfix["environment"]["MAIL_NETWORKS"]
    assert env["MASKMAIL_TRUSTED_RELAYS"] == network["subnet"]
    assert env["MASKMAIL_TRUSTED_PROXIES"] == network["gateway"]
    assert env["MASKMAIL_AUTHSERV_IDS"] == postfix["environment"]["MAIL_HOSTNAME"]
    assert env["MASKMAIL_DOMAIN"] == postfix["environment"]["RELAY_DOMAIN"]
    # The database and Redis are the services of the same names.
    database = urlsplit(env["MASKMAIL_DATABASE_URL"])
    pg = services["postgres"]["environment"]
    assert (database.hostname, database.username, database.password) == (
        "postgres", pg["POSTGRES_USER"], pg["POSTGRES_PASSWORD"]
    )  # fmt: skip
    assert database.path == f"/{pg['POSTGRES_DB']}"
    assert urlsplit(env["MASKMAIL_REDIS_URL"]).hostname == "redis"
    # Every image of ours starts from the same Debian, which the container tests make.
    bases = {
        frozenset(containers.base_images(path))
        for path in (DEPLOY / "Containerfile", *DEPLOY.glob("*/Containerfile"))
    }
    assert len(bases) == 1


def test_the_docs_compose_commands_name_its_services(resolved: dict[str, Any]) -> None:
    text = (ROOT / "docs" / "deploy.md").read_text()
    part = text[text.index("## With containers") : text.index("## On a Debian 12 server")]
    runs = re.findall(r"^docker compose run --rm (\w+) ([^#\n]*)", part, re.M)
    assert len(runs) >= 3
    for service, args in runs:
        assert service in MASKMAIL_SERVICES
        assert _accepted(*args.split()), args
    assert "cp compose.env.example .env" in part
