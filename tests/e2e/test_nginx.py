"""Behind the shipped nginx configuration: each client is throttled on its own, however it
fills X-Forwarded-For, and no spelling of /metrics gets the metrics out.

nginx runs deploy/nginx/maskmail.conf (tests/nginx.py); test clients connect to it from
different loopback addresses, as browsers from different places would.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from tests.e2e.conftest import Deployment
from tests.nginx import Nginx, running_nginx, site
from tests.support import free_port, run_cli, running

pytestmark = pytest.mark.slow
PASSWORD = "correct horse battery"
ORIGIN = {"Origin": "https://relay.example.com"}


@contextmanager
def behind_nginx(deployment: Deployment, **settings: str) -> Iterator[tuple[Nginx, int]]:
    """``maskmail serve`` with extra ``MASKMAIL_*`` settings, the shipped nginx in front;
    nginx and the API's own port."""
    env = {**deployment.env, **{f"MASKMAIL_{k.upper()}": v for k, v in settings.items()}}
    api_port = free_port()
    serve = ("serve", "--port", str(api_port))
    tmp = deployment.tmp
    with (
        running(env, *serve, port=api_port, log=tmp / "serve.log"),
        running_nginx(site(tmp, api_port)) as nginx,
    ):
        yield nginx, api_port


def test_one_guesser_behind_nginx_locks_out_only_itself(deployment: Deployment) -> None:
    """Ten wrong sign-ins from one client: it is refused from then on, even when it
    writes other addresses into X-Forwarded-For, and everyone else still signs in.

    Ten an hour rather than the default ten a minute: each try costs a real argon2 hash,
    and on a loaded machine ten of them can take long enough for a minute's window to
    forget the first ones."""
    email = "owner@example.com"
    deployment.cli("user", "add", email)
    assert run_cli(deployment.env, "user", "password", email, stdin=PASSWORD).returncode == 0
    with (
        behind_nginx(deployment, signin_rate_limit="10/hour") as (nginx, _),
        nginx.client("127.0.0.5") as guesser,
        nginx.client("127.0.0.6") as owner,
    ):
        wrong: list[int] = []
        while len(wrong) < 12 and 429 not in wrong:
            n = len(wrong)
            wrong.append(
                guesser.post(
                    "/sign-in",
                    data={"email": f"guess{n}@example.com", "password": "not it"},
                    headers={**ORIGIN, "X-Forwarded-For": f"192.0.2.{n}"},
                ).status_code
            )
        right = {"email": email, "password": PASSWORD}
        spoofing = guesser.post(
            "/sign-in", data=right, headers={**ORIGIN, "X-Forwarded-For": "127.0.0.6"}
        )
        signed_in = owner.post("/sign-in", data=right, headers=ORIGIN)
    # Refused after ten; one more may pass if the tries straddle the limiter's window
    # boundary, where the count of the window before is weighted down.
    assert wrong[:10] == [401] * 10 and wrong[-1] == 429, wrong
    assert spoofing.status_code == 429 and "Too many attempts" in spoofing.text
    assert signed_in.status_code == 303
    assert "maskmail_session=" in signed_in.headers["set-cookie"]
    assert "secure" in signed_in.headers["set-cookie"].lower()  # X-Forwarded-Proto believed


SPELLINGS = (
    "/metrics",
    "/metrics/",
    "//metrics",
    "/metrics//",
    "/metrics%2F",
    "/metrics%2f",
    "/%6Detrics",
    "/%6detrics/",
    "/./metrics",
    "/x/../metrics",
    "/METRICS",
    "/Metrics/",
    "/metrics?format=text",
)


def test_no_spelling_of_metrics_passes_nginx(deployment: Deployment) -> None:
    """nginx refuses the prefix, and maskmail would refuse the client it forwards for;
    Prometheus on the machine itself, connecting directly, is served."""
    with behind_nginx(deployment, metrics_allow="127.0.0.1/32") as (nginx, api_port):
        answers = {
            path: nginx.get_as_sent(path, "127.0.0.7", {"X-Forwarded-For": "127.0.0.1"})
            for path in SPELLINGS
        }
        with nginx.client("127.0.0.7") as outsider:
            ready = outsider.get("/readyz")
        direct = httpx.get(f"http://127.0.0.1:{api_port}/metrics")
    leaked = {
        path: status
        for path, (status, body) in answers.items()
        if status not in {403, 404} or b"maskmail_" in body
    }
    assert leaked == {}
    assert ready.status_code == 200
    assert direct.status_code == 200 and "maskmail_http_request" in direct.text
