"""E2E fixtures: a migrated database per backend and a user with a key, made through the CLI."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import BACKENDS, fresh_database, run_cli


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
