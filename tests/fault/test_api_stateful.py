"""schemathesis in stateful mode against the real `maskmail serve`, over real HTTP.

The state machine follows the OpenAPI links the app publishes (a created address's id
into GET, PATCH, PUT and DELETE by id). Each scenario runs as a new user, so a replay
meets the same (empty) state it first met and Hypothesis sees the same behaviour.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from tests.e2e.conftest import Deployment
from tests.fault.conftest import serving_api
from tests.support import make_keys, refused_by_rules_the_schema_cannot_state

pytestmark = pytest.mark.slow


@pytest.fixture
def api(deployment: Deployment) -> Iterator[tuple[str, str]]:
    with serving_api(deployment, "stateful@example.com", "10000000/minute") as (base, _):
        yield base, deployment.env["MASKMAIL_DATABASE_URL"]


def test_stateful_run_finds_no_server_error_and_no_schema_breach(api: tuple[str, str]) -> None:
    base, database_url = api
    # The addresses and the alias-creation contracts: the links this run is about.
    # Mailboxes and subdomains, whose state the links cannot reach (a verification code
    # arrives by mail), are left to the stateless run (tests/api/test_schemathesis.py).
    schema = (
        schemathesis.openapi.from_url(f"{base}/openapi.json")
        .include(path_regex=r"^/(api/|v3/relay/addresses)")
        .exclude(path_regex="mailboxes")
    )
    post = schema.raw_schema["paths"]["/v3/relay/addresses"]["post"]
    assert set(post["responses"]["200"]["links"]) == {
        "ReadAddress", "PatchAddress", "PutAddress", "DeleteAddress"
    }  # fmt: skip
    calls: list[tuple[str, str, int]] = []

    class Workflow(schema.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            [self.key] = asyncio.run(
                make_keys(database_url, f"s{secrets.token_hex(6)}@example.com")
            )

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            # The SimpleLogin-compatible routes read the key from Authentication.
            return {"headers": {"Authorization": f"Bearer {self.key}", "Authentication": self.key}}

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            # By the SPEC the list accepts any query string, and unknown parameters are
            # ignored everywhere: schema-violating requests need not be refused. Every
            # other check stands (no 5xx, statuses, content types, bodies, headers).
            excluded = [negative_data_rejection]
            if refused_by_rules_the_schema_cannot_state(case.operation.path):
                excluded.append(positive_data_acceptance)
            case.validate_response(
                response,
                excluded_checks=excluded,
                transport_kwargs=kwargs or None,
                recorder=self.recorder,
            )

        def after_call(self, response: Any, case: Any) -> None:
            super().after_call(response, case)
            calls.append((case.method, case.path, response.status_code))

    Workflow.run(
        settings=settings(
            max_examples=60,
            stateful_step_count=8,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
    )
    assert len(calls) >= 100
    statuses = {status for _, _, status in calls}
    assert not any(status >= 500 for status in statuses)
    # The links were followed: operations by id met the addresses the run created.
    by_id = [(m, s) for m, p, s in calls if p == "/v3/relay/addresses/{address_id}"]
    assert {("GET", 200), ("DELETE", 204)} <= set(by_id), sorted(set(by_id))
