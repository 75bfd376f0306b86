"""E2E fixtures: a migrated database per backend and a user with a key, made through the CLI."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from maskmail.mail.dkim import generate_key, txt_value
from tests.dns_server import running_dns
from tests.postfix import (
    Ports,
    maskmail_commands,
    maskmail_settings,
    rspamd_files,
    running_postfix,
)
from tests.rspamd import running_rspamd
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


def base_env(url: str, tmp: Path) -> dict[str, str]:
    """The settings every e2e deployment starts from."""
    return {
        "MASKMAIL_DATABASE_URL": url,
        "MASKMAIL_DATA_DIR": str(tmp / "var"),
        "MASKMAIL_DOMAIN": "relay.test",
        "MASKMAIL_RATE_LIMIT": "100000/minute",
    }


@pytest.fixture(params=BACKENDS)
def deployment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    with fresh_database(request.param, tmp_path) as url:
        deployment = Deployment(env=base_env(url, tmp_path), tmp=tmp_path)
        deployment.cli("db", "upgrade")
        yield deployment


# The DKIM key of strict.example, whose signed mail passes DMARC though SPF fails.
STRICT_KEY, _STRICT_PUBLIC = generate_key()
_STRICT_TXT = txt_value(_STRICT_PUBLIC)
# The DNS of the test domains, which rspamd checks SPF, DKIM and DMARC against.
ZONE = {
    "k1._domainkey.strict.example": [
        ("TXT", " ".join(f'"{_STRICT_TXT[i : i + 200]}"' for i in range(0, len(_STRICT_TXT), 200)))
    ],
    # The owners' provider: its mail comes from 127.0.0.1, as every test client's does.
    "owners.example": [("TXT", '"v=spf1 ip4:127.0.0.1 -all"')],
    "_dmarc.owners.example": [("TXT", '"v=DMARC1; p=none"')],
    # A domain whose mail never comes from here, and which asks for rejection.
    "strict.example": [("TXT", '"v=spf1 ip4:192.0.2.1 -all"')],
    "_dmarc.strict.example": [("TXT", '"v=DMARC1; p=reject"')],
    # A domain whose mail never comes from here, and which asks for quarantine.
    "lax.example": [("TXT", '"v=spf1 ip4:192.0.2.1 -all"')],
    "_dmarc.lax.example": [("TXT", '"v=DMARC1; p=quarantine"')],
    # A domain whose mail never comes from here, with no DMARC policy.
    "far.example": [("TXT", '"v=spf1 ip4:192.0.2.1 -all"')],
}


@pytest.fixture(scope="session")
def milter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """rspamd's milter as docs/postfix.md sets it up, resolving against ZONE; yields
    its port. One for the session: it takes seconds to start."""
    port = free_port()
    with (
        running_dns(ZONE) as dns_port,
        running_rspamd(
            tmp_path_factory.mktemp("rspamd-milter"),
            nameserver=f"127.0.0.1:{dns_port}",
            milter=True,
            local_d=rspamd_files(port),
        ),
    ):
        wait_for_port(port)
        yield port


@dataclass
class BehindPostfix:
    """``maskmail up`` behind a private Postfix, as docs/postfix.md sets it up."""

    api: httpx.Client  # the owner's API client
    ports: Ports
    log: Path  # Postfix's log
    # What the doc's commands before ``maskmail up`` printed (the DKIM record).
    printed: list[str]
    # Stops maskmail and starts it again, as ``systemctl restart`` does.
    restart: Callable[[], None]


@contextmanager
def behind_postfix(
    deployment: Deployment,
    sink: Sink,
    milter: int,
    *,
    key: str,
    domain: str,
    owners_domain: str,
    env: dict[str, str] | None = None,
    outside_domains: tuple[str, ...] = (),
    socket_unit: bool = False,
    postfix_settings: str = "",
) -> Iterator[BehindPostfix]:
    """Mail for ``owners_domain`` and ``outside_domains`` goes on to ``sink``; ``env``
    adds maskmail settings, ``postfix_settings`` main.cf lines. With ``socket_unit``, the
    test holds maskmail's SMTP and policy sockets and passes them to each maskmail
    process, as deploy/systemd/maskmail-smtp.socket does."""
    ports = Ports(
        inbound=free_port(),
        smarthost=free_port(),
        maskmail=free_port(),
        policy=free_port(),
        milter=milter,
        sink=sink.port,
    )
    api_port = free_port()
    settings = {
        **deployment.env,
        **maskmail_settings(domain, ports.smarthost),
        **(env or {}),
    }
    # The doc's commands as it prints them (a DKIM key, then ``up``), on this test's ports.
    *before, up = maskmail_commands(ports.maskmail, ports.policy)
    printed = []
    for command in before:
        result = run_cli(settings, *command)
        assert result.returncode == 0, result.stderr
        printed.append(result.stdout)
    held = ExitStack()
    sockets = (
        [held.enter_context(_listening(p)) for p in (ports.maskmail, ports.policy)]
        if socket_unit
        else []
    )
    process = ExitStack()

    def start() -> None:
        process.enter_context(
            running(
                settings,
                *up,
                "--api-port",
                str(api_port),
                port=api_port,
                log=deployment.tmp / "up.log",
                sockets=sockets,
            )
        )

    def restart() -> None:
        process.close()
        start()

    start()
    with (
        held,
        process,
        running_postfix(
            domain=domain,
            owners_domain=owners_domain,
            ports=ports,
            outside_domains=outside_domains,
            settings=postfix_settings,
        ) as log,
    ):
        wait_for_port(ports.maskmail)
        wait_for_port(ports.policy)
        wait_for_port(ports.inbound)
        with httpx.Client(
            base_url=f"http://{HOST}:{api_port}", headers={"Authorization": f"Bearer {key}"}
        ) as api:
            yield BehindPostfix(api=api, ports=ports, log=log, printed=printed, restart=restart)


def _listening(port: int) -> socket.socket:
    sock = socket.create_server((HOST, port))
    sock.listen(128)
    return sock


OWNERS_DOMAIN = "owners.example"  # the users' own mail provider, reached through the sink


@dataclass
class Front:
    """What a Postfix in front runs between: maskmail's deployment, the sink that stands
    for the internet, and rspamd's milter."""

    deployment: Deployment
    sink: Sink
    milter: int

    def postfix(
        self,
        *,
        key: str,
        outside_domains: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        socket_unit: bool = False,
        postfix_settings: str = "",
    ) -> AbstractContextManager[BehindPostfix]:
        return behind_postfix(
            self.deployment,
            self.sink,
            self.milter,
            key=key,
            domain=self.deployment.env["MASKMAIL_DOMAIN"],
            owners_domain=OWNERS_DOMAIN,
            env=env,
            outside_domains=outside_domains,
            socket_unit=socket_unit,
            postfix_settings=postfix_settings,
        )


@pytest.fixture
def front(deployment: Deployment, sink: Sink, milter: int) -> Front:
    return Front(deployment, sink, milter)
