"""Password reset by mail and deleting one's account, in a real browser against the
real ``maskmail up`` (both backends): the reset link read from the outbox the server
mails to, the export downloaded before the deletion, axe-core on every new page."""

from __future__ import annotations

import json
import mailbox
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import PASSWORD, USERS, Site, serious_violations, sign_in

pytestmark = pytest.mark.slow
ANN, BOB = USERS
NEW = "my brand new password"


def _reset_link(outbox: Path, recipient: str, wait: float = 15) -> str:
    """The link of the newest reset message to ``recipient`` (sent after the answer, so
    it may take a moment)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if outbox.exists():
            for message in mailbox.Maildir(outbox, create=False):
                if message["To"] != recipient or "Reset" not in str(message["Subject"]):
                    continue
                payload = message.get_payload(decode=True)
                assert isinstance(payload, bytes)
                found = re.search(r"(http://\S+/reset-password\?token=[\w-]+)", payload.decode())
                assert found is not None
                return found.group(1)
        time.sleep(0.1)
    raise AssertionError(f"no reset message to {recipient}")


def test_forgotten_password_reset_by_mail(page: Page, site: Site) -> None:
    page.goto(site.url + "/")
    page.get_by_role("link", name="Forgot password?").click()
    assert serious_violations(page) == []
    page.get_by_label("Email").fill(ANN)
    page.get_by_role("button", name="Mail me a link").click()
    expect(page.get_by_role("status").last).to_contain_text(
        "If an account signs in with that email"
    )
    page.goto(_reset_link(site.outbox, ANN))
    assert serious_violations(page) == []
    page.get_by_label("New password", exact=True).fill(NEW)
    page.get_by_label("New password again").fill(NEW)
    page.get_by_role("button", name="Set password").click()
    expect(page.locator(".notice")).to_contain_text("Your password is set.")
    assert serious_violations(page) == []
    # The old password no longer signs in; the new one does.
    page.get_by_role("link", name="Sign in").click()
    page.get_by_label("Email").fill(ANN)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("Wrong email or password.")
    sign_in(page, site, ANN, NEW)
    # The link worked once.
    page.goto(_reset_link(site.outbox, ANN))
    expect(page.get_by_role("alert")).to_contain_text("used, expired or unknown")


def test_deleting_ones_account(page: Page, site: Site, tmp_path: Path) -> None:
    sign_in(page, site, BOB)
    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Password").click()
    page.get_by_role("link", name="Delete account").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Delete your account")
    assert serious_violations(page) == []
    with page.expect_download() as download:
        page.get_by_role("link", name="Download your data (JSON)").click()
    saved = tmp_path / "export.json"
    download.value.save_as(saved)
    assert json.loads(saved.read_text())["email"] == BOB
    page.get_by_label("Your password").fill("not the password")
    page.get_by_role("button", name="Delete my account").click()
    expect(page.get_by_role("alert")).to_have_text("The password is wrong.")
    with site.api(BOB) as api:
        assert api.get("/v3/relay/addresses").status_code == 200
        page.get_by_label("Your password").fill(PASSWORD)
        page.get_by_role("button", name="Delete my account").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Your account is deleted")
        assert serious_violations(page) == []
        # The account's keys stop with it, and the browser is signed out.
        assert api.get("/v3/relay/addresses").status_code == 401
    page.goto(site.url + "/")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
