"""/metrics from real processes: mail outcomes under `up`, and the sum of `serve --workers 2`."""

from __future__ import annotations

import smtplib

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import Deployment
from tests.sink import HOST, Sink
from tests.support import free_port, running, wait_for_port
from tests.test_operations_doc import queries, unknown

pytestmark = pytest.mark.slow


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def note(rcpt: str, n: int) -> bytes:
    return f"From: a@example.net\r\nTo: {rcpt}\r\nSubject: {n}\r\n\r\nhi\r\n".encode()


def test_mail_outcomes_and_smarthost_latency(deployment: Deployment, sink: Sink) -> None:
    key = deployment.user_with_key("owner@example.com")
    api_port, smtp_port = free_port(), free_port()
    env = {**deployment.env, "MASKMAIL_SMARTHOST": f"{HOST}:{sink.port}"}
    up = ("up", "--api-port", str(api_port), "--smtp-port", str(smtp_port))
    with running(env, *up, port=api_port, log=deployment.tmp / "up.log"):
        wait_for_port(smtp_port)
        api = httpx.Client(
            base_url=f"http://{HOST}:{api_port}", headers={"Authorization": f"Bearer {key}"}
        )
        with api, smtplib.SMTP(HOST, smtp_port, timeout=30) as client:
            created = api.post("/v3/relay/addresses").json()
            address = created["full_address"]
            client.sendmail("a@example.net", [address], note(address, 1))
            for reply, n in (("550 5.1.1 no such user", 2), ("451 4.3.0 try later", 3)):
                sink.handler.reply = reply
                with pytest.raises(smtplib.SMTPDataError):
                    client.sendmail("a@example.net", [address], note(address, n))
            sink.handler.reply = None
            api.patch(f"/v3/relay/addresses/{created['id']}", json={"enabled": False})
            client.sendmail("a@example.net", [address], note(address, 4))
            text = httpx.get(f"http://{HOST}:{api_port}/metrics").text
    scraped = samples(text)
    outcomes = {
        dict(labels)["outcome"]: value
        for (name, labels), value in scraped.items()
        if name == "maskmail_mail_messages_total"
    }
    assert outcomes == {"forwarded": 1, "refused": 1, "deferred": 1, "blocked": 1}
    latency = {
        dict(labels)["result"]: value
        for (name, labels), value in scraped.items()
        if name == "maskmail_smarthost_seconds_count"
    }
    assert latency == {"accepted": 1, "refused": 1, "deferred": 1}
    assert scraped[("maskmail_db_pool_size", (("plane", "mail"),))] > 0
    # Every metric and label the dashboard and the alert rules in docs/operations.md
    # query is in what this process serves.
    series: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            series.setdefault(sample.name, set()).update(sample.labels)
    assert not unknown(queries(), series)


def test_workers_are_summed_in_one_scrape(deployment: Deployment) -> None:
    key = deployment.user_with_key("owner@example.com")
    port = free_port()
    args = ("serve", "--workers", "2", "--port", str(port))
    route = (
        "maskmail_http_request_duration_seconds_count",
        (("method", "GET"), ("route", "/v3/relay/addresses"), ("status", "200")),
    )
    values = deployment.tmp / "prometheus"
    env = {**deployment.env, "PROMETHEUS_MULTIPROC_DIR": str(values)}
    with running(env, *args, port=port, log=deployment.tmp / "serve.log"):
        for _ in range(40):  # new connections: both workers answer some
            response = httpx.get(
                f"http://{HOST}:{port}/v3/relay/addresses",
                headers={"Authorization": f"Bearer {key}"},
            )
            assert response.status_code == 200
        seen = {samples(httpx.get(f"http://{HOST}:{port}/metrics").text)[route] for _ in range(6)}
    assert seen == {40}
    # Both workers answered requests (each wrote its own histogram values), so the 40
    # seen in every scrape, whichever worker served it, is their sum.
    assert len(list(values.glob("histogram_*.db"))) == 2
