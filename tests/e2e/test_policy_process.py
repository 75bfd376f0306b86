"""The policy service as a user starts it: `maskmail smtp --policy-port`, or the setting."""

from __future__ import annotations

import socket

import pytest

from tests.e2e.conftest import Deployment
from tests.sink import HOST
from tests.support import free_port, run_cli, running, wait_for_port

pytestmark = pytest.mark.slow
DOMAIN = "relay.test"  # the deployment fixture's domain


def ask(port: int, recipient: str) -> bytes:
    request = (
        "request=smtpd_access_policy\nprotocol_state=RCPT\nsender=alice@example.com\n"
        f"recipient={recipient}\n\n"
    ).encode()
    with socket.create_connection((HOST, port), timeout=30) as conn:
        conn.sendall(request)
        answer = b""
        while not answer.endswith(b"\n\n"):
            chunk = conn.recv(4096)
            assert chunk, answer
            answer += chunk
    return answer


@pytest.mark.parametrize("how", ["option", "setting"])
def test_smtp_serves_the_policy_service(deployment: Deployment, how: str) -> None:
    smtp_port, policy_port = free_port(), free_port()
    env = dict(deployment.env)
    args = ["smtp", "--port", str(smtp_port)]
    if how == "option":
        args += ["--policy-port", str(policy_port)]
    else:
        env["MASKMAIL_POLICY_PORT"] = str(policy_port)
    with running(env, *args, port=smtp_port, log=deployment.tmp / "smtp.log"):
        wait_for_port(policy_port)
        assert ask(policy_port, f"nosuchaddr@{DOMAIN}") == (
            b"action=550 5.1.1 No such user here\n\n"
        )
        assert ask(policy_port, "someone@example.net") == b"action=DUNNO\n\n"


def test_a_bad_policy_port_is_one_line(deployment: Deployment) -> None:
    for args, env in (
        (("smtp", "--policy-port", "70000"), {}),
        (("smtp",), {"MASKMAIL_POLICY_PORT": "-1"}),
    ):
        failed = run_cli({**deployment.env, **env}, *args)
        assert failed.returncode == 2, failed.stderr
        [line] = failed.stderr.strip().splitlines()
        assert "policy" in line.lower(), line
