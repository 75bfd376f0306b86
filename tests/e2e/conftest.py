"""E2E fixtures: a migrated database per backend and a user with a key, made through the CLI."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.postfix import Ports, running_postfix
from tests.sink import HOST, Sink
from tests.support import BACKENDS, free_port, fresh_database, run_cli, running, wait_for_port


@dataclass
class Deployment:
    env: dict[str, str]
    tmp: Path

    def cli(self, *args: str) -> str:
        result = run_cli(self.env, *args)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def user_with_key(self, email: str) -> str:
        self.cli("user", "add", email)
        return self.cli("key", "create", email).strip()


@pytest.fixture(params=BACKENDS)
def deployment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    with fresh_database(request.param, tmp_path) as url:
        env = {
            "MASKMAIL_DATABASE_URL": url,
            "MASKMAIL_DATA_DIR": str(tmp_path / "var"),
            "MASKMAIL_DOMAIN": "relay.test",
            "MASKMAIL_RATE_LIMIT": "100000/minute",
        }
        deployment = Deployment(env=env, tmp=tmp_path)
        deployment.cli("db", "upgrade")
        yield deployment


@dataclass
class BehindPostfix:
    """``maskmail up`` behind a private Postfix, as docs/postfix.md sets it up."""

    api: httpx.Client  # the owner's API client
    ports: Ports
    log: Path  # Postfix's log


@contextmanager
def behind_postfix(
    deployment: Deployment,
    sink: Sink,
    *,
    key: str,
    domain: str,
    owners_domain: str,
    env: dict[str, str] | None = None,
    outside_domains: tuple[str, ...] = (),
) -> Iterator[BehindPostfix]:
    """Mail for ``owners_domain`` and ``outside_domains`` goes on to ``sink``; ``env``
    adds maskmail settings."""
    ports = Ports(inbound=free_port(), smarthost=free_port(), maskmail=free_port(), sink=sink.port)
    api_port = free_port()
    settings = {
        **deployment.env,
        "MASKMAIL_SMARTHOST": f"127.0.0.1:{ports.smarthost}",
        **(env or {}),
    }
    up = ("up", "--api-port", str(api_port), "--smtp-port", str(ports.maskmail))
    with (
        running(settings, *up, port=api_port, log=deployment.tmp / "up.log"),
        running_postfix(
            domain=domain,
            owners_domain=owners_domain,
            ports=ports,
            outside_domains=outside_domains,
        ) as log,
    ):
        wait_for_port(ports.maskmail)
        wait_for_port(ports.inbound)
        with httpx.Client(
            base_url=f"http://{HOST}:{api_port}", headers={"Authorization": f"Bearer {key}"}
        ) as api:
            yield BehindPostfix(api=api, ports=ports, log=log)
