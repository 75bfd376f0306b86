"""Open sign-up end to end in Chromium: the real ``maskmail up`` with
MASKMAIL_SIGNUP=open, a sink smarthost as the internet, the code read from the message
that reached it (signed with the relay's DKIM key, plain text), then signing in."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from email import message_from_bytes, policy

import dkim
import pytest
from playwright.sync_api import Page, expect

from maskmail.mail.dkim import generate_key, txt_value
from tests.browser.conftest import Site, _off_the_loop, serious_violations
from tests.sink import HOST, Received, Sink
from tests.support import BACKENDS, free_port, fresh_database, run_cli, running

pytestmark = pytest.mark.slow

PASSWORD = "my own long password"


@pytest.fixture(scope="module")
def sink() -> Iterator[Sink]:
    server = Sink(free_port())
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module", params=BACKENDS)
def site(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    sink: Sink,
) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("signup-site")
    private, public = generate_key()
    (tmp / "dkim.key").write_bytes(private)
    (tmp / "dkim.pub").write_bytes(public)
    with _off_the_loop(fresh_database(request.param, tmp)) as url:
        env = {
            "MASKMAIL_DATABASE_URL": url,
            "MASKMAIL_DATA_DIR": str(tmp / "var"),
            "MASKMAIL_DOMAIN": "relay.example.com",
            "MASKMAIL_SMARTHOST": f"{HOST}:{sink.port}",
            "MASKMAIL_DKIM_KEY_FILE": str(tmp / "dkim.key"),
            "MASKMAIL_SIGNUP": "open",
            "MASKMAIL_RATE_LIMIT": "100000/minute",
        }
        result = run_cli(env, "db", "upgrade")
        assert result.returncode == 0, result.stderr
        api_port, smtp_port = free_port(), free_port()
        up = ("up", "--api-port", str(api_port), "--smtp-port", str(smtp_port))
        with running(env, *up, port=api_port, log=tmp / "up.log"):
            yield Site(f"http://127.0.0.1:{api_port}", smtp_port, tmp / "var" / "outbox", {})


def _message_to(sink: Sink, recipient: str) -> Received:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = [m for m in sink.messages if recipient in m.rcpt_tos]
        if found:
            return found[-1]
        time.sleep(0.1)
    raise AssertionError(f"no message to {recipient} reached the smarthost")


def test_open_sign_up_end_to_end(page: Page, site: Site, sink: Sink) -> None:
    email = f"newcomer-{free_port()}@example.org"
    page.goto(site.url + "/")
    page.get_by_role("link", name="Sign up").click()
    expect(page.get_by_role("heading", name="Make a maskmail account")).to_be_visible()
    assert serious_violations(page) == []
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("heading", name="Check your mail")).to_be_visible()

    got = _message_to(sink, email)
    public = (site.outbox.parents[1] / "dkim.pub").read_bytes()
    assert got.data.startswith(b"DKIM-Signature: ")
    assert dkim.verify(got.data, dnsfunc=lambda name, timeout=5: txt_value(public).encode())
    parsed = message_from_bytes(got.data, policy=policy.default)
    assert parsed.get_content_type() == "text/plain"
    found = re.search(r"code: (\d{6})", parsed.get_content())
    assert found is not None

    # Not before the address is verified (in another tab: the page waits for the code).
    other = page.context.new_page()
    other.goto(site.url + "/")
    other.get_by_label("Email").fill(email)
    other.get_by_label("Password").fill(PASSWORD)
    other.get_by_role("button", name="Sign in").click()
    expect(other.get_by_role("alert")).to_contain_text("Wrong email or password")
    other.close()

    page.get_by_label("Code").fill(found.group(1))
    page.get_by_role("button", name="Verify").click()
    expect(page.get_by_role("heading", name="Your account is ready")).to_be_visible()
    page.get_by_role("link", name="Sign in").click()
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("button", name="Sign out").wait_for()
    expect(page.get_by_text(email).first).to_be_visible()
