"""`maskmail smtp` as several workers: the setting chooses how many, one scrape of the
health port adds up all of them, and SIGTERM stops them all."""

from __future__ import annotations

import os
import signal
import smtplib
import subprocess

import httpx
import pytest

from tests.e2e.conftest import Deployment
from tests.e2e.test_metrics import note, samples
from tests.fault.procs import wait_until
from tests.fault.test_smtp_workers import workers_of
from tests.sink import HOST, Sink
from tests.support import free_port, maskmail_cmd, running, wait_for_port

pytestmark = pytest.mark.slow
MESSAGES = 30
FORWARDED = ("maskmail_mail_messages_total", (("outcome", "forwarded"),))


def test_workers_from_the_setting_count_together_and_stop_together(
    deployment: Deployment, sink: Sink
) -> None:
    key = deployment.user_with_key("workers@example.com")
    api_port, smtp_port, health_port = free_port(), free_port(), free_port()
    env = {
        **deployment.env,
        "MASKMAIL_SMARTHOST": f"{HOST}:{sink.port}",
        "MASKMAIL_SMTP_WORKERS": "3",
    }
    with running(
        env, "serve", "--port", str(api_port), port=api_port, log=deployment.tmp / "api.log"
    ):
        address = httpx.post(
            f"http://{HOST}:{api_port}/v3/relay/addresses",
            headers={"Authorization": f"Bearer {key}"},
        ).json()["full_address"]
    command = maskmail_cmd("smtp", "--port", str(smtp_port), "--health-port", str(health_port))
    with (deployment.tmp / "smtp.log").open("ab") as out:
        parent = subprocess.Popen(
            command, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        wait_for_port(smtp_port, parent)
        wait_for_port(health_port, parent)
        wait_until(lambda: len(workers_of(parent)) == 3, 30, "three workers")
        workers = workers_of(parent)
        for n in range(MESSAGES):  # a connection each: the workers share them
            with smtplib.SMTP(HOST, smtp_port, timeout=30) as client:
                client.sendmail("a@example.net", [address], note(address, n))
        assert len(sink.messages) == MESSAGES
        metrics = f"http://{HOST}:{health_port}/metrics"
        seen = {samples(httpx.get(metrics).text)[FORWARDED] for _ in range(6)}
        assert seen == {MESSAGES}

        parent.send_signal(signal.SIGTERM)
        assert parent.wait(timeout=30) == 0
        # The parent reaped every worker before it exited.
        assert not [pid for pid in workers if os.path.exists(f"/proc/{pid}")]
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
