"""Property-based run from the app's own OpenAPI: no 5xx, no undocumented status or shape."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from maskmail.app import create_app
from maskmail.mail.plane import outbound_for
from maskmail.store.migrate import upgrade
from tests.api.conftest import make_settings
from tests.support import (
    BACKENDS,
    fresh_database,
    make_keys,
    refused_by_rules_the_schema_cannot_state,
)


@pytest.fixture(scope="module", params=BACKENDS)
def fuzz_target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Any, str]]:
    with fresh_database(request.param, tmp_path_factory.mktemp("fuzz")) as url:
        upgrade(url)
        [key] = asyncio.run(make_keys(url, "fuzz@example.com"))
        settings = make_settings(
            url, max_addresses_per_user=25, data_dir=tmp_path_factory.mktemp("data")
        )
        # Verification messages of new mailboxes go to the Maildir outbox.
        app = create_app(settings, outbound=outbound_for(settings))
        yield schemathesis.openapi.from_asgi("/openapi.json", app), key


@pytest.mark.slow
def test_api_conforms_to_its_schema(fuzz_target: tuple[Any, str]) -> None:
    # Schemathesis' pytest plugin does not run on pytest 9, so each operation's
    # strategy drives a plain Hypothesis test here.
    api_schema, key = fuzz_target
    # The SimpleLogin-compatible routes read the key from Authentication instead.
    headers = {"Authorization": f"Bearer {key}", "Authentication": key}
    operations = [result.ok() for result in api_schema.get_all_operations()]
    labels = {operation.label for operation in operations}
    # Every route of /v3, then addy.io and SimpleLogin compatibility, is exercised.
    assert {
        "GET /v3/relay/addresses",
        "POST /v3/relay/addresses",
        "GET /v3/relay/addresses/{address_id}",
        "PATCH /v3/relay/addresses/{address_id}",
        "PUT /v3/relay/addresses/{address_id}",
        "DELETE /v3/relay/addresses/{address_id}",
        "POST /v3/relay/addresses/{address_id}/contacts",
        "GET /v3/relay/addresses/{address_id}/bounces",
        "GET /v3/relay/mailboxes",
        "POST /v3/relay/mailboxes",
        "GET /v3/relay/mailboxes/verify",
        "POST /v3/relay/mailboxes/verify",
        "POST /v3/relay/mailboxes/{mailbox_id}/verify",
        "PATCH /v3/relay/mailboxes/{mailbox_id}",
        "DELETE /v3/relay/mailboxes/{mailbox_id}",
        "GET /v3/relay/addresses/{address_id}/mailboxes",
        "PUT /v3/relay/addresses/{address_id}/mailboxes",
        "GET /v3/relay/mailboxes/{mailbox_id}/pgp",
        "PUT /v3/relay/mailboxes/{mailbox_id}/pgp",
        "PATCH /v3/relay/mailboxes/{mailbox_id}/pgp",
        "DELETE /v3/relay/mailboxes/{mailbox_id}/pgp",
    } <= labels
    assert len(labels) >= 8 + 4
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
        def check(case: Any) -> None:
            refusable = refused_by_rules_the_schema_cannot_state(case.operation.path)
            excluded = [positive_data_acceptance] if refusable else []
            case.call_and_validate(headers=headers, excluded_checks=excluded)

        check()


# Each contract's own error body; every other path uses the SPEC's.
ERROR_SCHEMAS = {"/api/v1/": "AddyError", "/api/": "SimpleLoginError"}


def _error_schema(path: str) -> str:
    return next(
        (name for prefix, name in ERROR_SCHEMAS.items() if path.startswith(prefix)), "Error"
    )


def test_schema_documents_every_status(fuzz_target: tuple[Any, str]) -> None:
    raw = fuzz_target[0].raw_schema
    for path, item in raw["paths"].items():
        for method, operation in item.items():
            statuses = set(operation["responses"])
            # The verification link's page and button are the routes that take no key.
            keyed = {"429", "500", "503"} | (
                {"401"} if path != "/v3/relay/mailboxes/verify" else set()
            )
            assert keyed <= statuses, (method, path)
            expected = {"$ref": f"#/components/schemas/{_error_schema(path)}"}
            for status in statuses - {"200", "201", "204"}:
                ref = operation["responses"][status]["content"]["application/json"]["schema"]
                assert ref == expected, (method, path, status)
    assert "403" in raw["paths"]["/v3/relay/addresses"]["post"]["responses"]
    assert "422" in raw["paths"]["/v3/relay/addresses/{address_id}"]["patch"]["responses"]
    assert "422" not in raw["paths"]["/v3/relay/addresses"]["get"]["responses"]
