"""Fault tests run real processes, with the e2e deployment fixture."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tests.e2e.conftest import Deployment, deployment
from tests.support import free_port, running

__all__ = ["deployment", "serving_api"]


@contextmanager
def serving_api(deployment: Deployment, mailbox: str, rate_limit: str) -> Iterator[tuple[str, str]]:
    """A real `maskmail serve` with the given rate limit; yields its URL and a key of a
    new user."""
    key = deployment.user_with_key(mailbox)
    env = {**deployment.env, "MASKMAIL_RATE_LIMIT": rate_limit}
    port = free_port()
    with running(env, "serve", "--port", str(port), port=port, log=deployment.tmp / "serve.log"):
        yield f"http://127.0.0.1:{port}", key
