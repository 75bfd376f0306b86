"""Open sign-up end to end in Chromium: the real ``maskmail up`` with
MASKMAIL_SIGNUP=open, a sink smarthost as the internet, the code read from the message
that reached it (signed with the relay's DKIM key, plain text), then signing in."""

from __future__ import annotations

import re
from collections.abc import Iterator

import dkim
import pytest
from playwright.sync_api import Page, expect

from maskmail.mail.dkim import txt_value
from tests.browser.conftest import Site, mailing_site, message_to, serious_violations
from tests.sink import Sink
from tests.support import BACKENDS, free_port

pytestmark = pytest.mark.slow

PASSWORD = "my own long password"


@pytest.fixture(scope="module", params=BACKENDS)
def site(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    sink: Sink,
) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("signup-site")
    with mailing_site(request.param, tmp, sink, signup="open") as started:
        yield started


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

    got, parsed = message_to(sink, email, "Confirm your mailbox for maskmail")
    public = (site.outbox.parents[1] / "dkim.pub").read_bytes()
    assert got.data.startswith(b"DKIM-Signature: ")
    assert dkim.verify(got.data, dnsfunc=lambda name, timeout=5: txt_value(public).encode())
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
