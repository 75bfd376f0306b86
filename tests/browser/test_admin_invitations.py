"""The admin page's invitation by mail and the header's "Admin" link, in Chromium against
the real ``maskmail up`` with MASKMAIL_SIGNUP=invite and a sink smarthost (both
backends): the link the invitee is mailed signs them up in their own browser; the
header offers "Admin" to admins alone, and /admin is a 404 to anyone else."""

from __future__ import annotations

import re
from collections.abc import Iterator

import dkim
import pytest
from playwright.sync_api import Browser, Page, expect

from maskmail.mail.dkim import txt_value
from tests.browser.conftest import (
    PASSWORD,
    USERS,
    Site,
    mailing_site,
    message_to,
    serious_violations,
    sign_in,
)
from tests.sink import Sink
from tests.support import BACKENDS, free_port, run_cli

pytestmark = pytest.mark.slow
ANN, BOB = USERS
INVITED = "You are invited to maskmail"
VERIFY = "Confirm your mailbox for maskmail"


def _cli(site: Site, *args: str, stdin: str | None = None) -> None:
    result = run_cli(site.env, *args, stdin=stdin)
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module", params=BACKENDS)
def site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, sink: Sink
) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("invite-site")
    with mailing_site(request.param, tmp, sink, signup="invite") as started:
        for email in USERS:
            _cli(started, "user", "add", email)
            _cli(started, "user", "password", email, stdin=PASSWORD + "\n")
        _cli(started, "user", "admin", ANN)
        yield started


def _sign_out(page: Page) -> None:
    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("button", name="Sign in").wait_for()


def test_an_invitation_mailed_from_the_admin_page_signs_the_invitee_up(
    page: Page, site: Site, sink: Sink, browser: Browser
) -> None:
    invitee = f"friend-{free_port()}@example.org"
    sign_in(page, site, ANN)
    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Admin").click()
    page.get_by_role("navigation", name="Admin").get_by_role("link", name="Invitations").click()
    page.get_by_label("Good for").fill("2d")
    page.get_by_label("Send it to").fill(invitee)
    page.get_by_role("button", name="Make invitation").click()
    expect(page.locator("#invitation-mailed")).to_have_text(
        "It was mailed to the address you gave."
    )
    assert serious_violations(page) == []
    shown = page.locator("#new-invitation").inner_text()

    # The message: DKIM-signed by the relay, plain text, the link the page showed once.
    got, parsed = message_to(sink, invitee, INVITED)
    public = (site.outbox.parents[1] / "dkim.pub").read_bytes()
    assert dkim.verify(got.data, dnsfunc=lambda name, timeout=5: txt_value(public).encode())
    assert parsed["From"] == "accounts@relay.example.com"
    assert parsed.get_content_type() == "text/plain"
    found = re.search(r"(http://\S+/sign-up\?invite=(mmi_[\w-]+))", parsed.get_content())
    assert found is not None and found.group(1) == shown
    link, token = found.groups()

    # The audit row says "mailed", never the address.
    page.get_by_role("navigation", name="Admin").get_by_role("link", name="Audit log").click()
    newest = page.locator("table.audit tbody tr").first
    expect(newest).to_contain_text("mailed")
    expect(newest).not_to_contain_text(invitee)

    # The invitee, in a browser of their own, follows the link and signs up.
    theirs = browser.new_context()
    try:
        tab = theirs.new_page()
        tab.goto(link)
        expect(tab.get_by_role("heading", name="Make a maskmail account")).to_be_visible()
        expect(tab.get_by_label("Invitation")).to_have_value(token)
        tab.get_by_label("Email").fill(invitee)
        tab.get_by_label("Password").fill(PASSWORD)
        tab.get_by_role("button", name="Sign up").click()
        expect(tab.get_by_role("heading", name="Check your mail")).to_be_visible()
        _, verification = message_to(sink, invitee, VERIFY)
        opened = re.search(r"(http://\S+/sign-up/verify\?token=\S+)", verification.get_content())
        assert opened is not None
        tab.goto(opened.group(1))
        tab.get_by_role("button", name="Verify and finish signing up").click()
        expect(tab.get_by_role("heading", name="Your account is ready")).to_be_visible()
        tab.get_by_role("link", name="Sign in").click()
        sign_in(tab, site, invitee)
        expect(tab.locator("header .who")).to_have_text(invitee)
        # A new member, not an admin; and the link worked once.
        expect(tab.get_by_role("link", name="Admin")).to_have_count(0)
        _sign_out(tab)
        tab.goto(link)
        expect(tab.get_by_role("alert")).to_contain_text("This invitation is not valid")
    finally:
        theirs.close()

    page.get_by_role("navigation", name="Admin").get_by_role("link", name="Invitations").click()
    expect(page.locator("table.invitations tbody tr").first.locator("td").nth(1)).to_have_text(
        "used"
    )


def test_the_admin_link_is_for_admins_and_the_admin_page_refuses_others(
    page: Page, site: Site
) -> None:
    # Signed out, /admin is the sign-in page, as every page is.
    page.goto(site.url + "/admin")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()

    sign_in(page, site, BOB)
    header = page.get_by_role("navigation", name="Dashboard")
    expect(header.get_by_role("link", name="Addresses")).to_be_visible()
    expect(header.get_by_role("link", name="Admin")).to_have_count(0)
    unknown = page.goto(site.url + "/no-such-page")
    assert unknown is not None and unknown.status == 404
    not_found = page.locator("main").inner_text()
    for path in ("/admin", "/admin/invitations", "/admin/audit"):
        refused = page.goto(site.url + path)
        assert refused is not None and refused.status == 404, path
        assert page.locator("main").inner_text() == not_found, path
    page.goto(site.url + "/")
    _sign_out(page)

    sign_in(page, site, ANN)
    admin = header.get_by_role("link", name="Admin")
    expect(admin).to_be_visible()
    expect(admin).not_to_have_attribute("aria-current", "page")
    admin.click()
    expect(page.get_by_role("heading", name="Admin: users")).to_be_visible()
    expect(admin).to_have_attribute("aria-current", "page")

    # The operator takes it back: the next page has no link, and /admin is a 404.
    _cli(site, "user", "admin", ANN, "--revoke")
    try:
        page.goto(site.url + "/")
        expect(header.get_by_role("link", name="Addresses")).to_be_visible()
        expect(header.get_by_role("link", name="Admin")).to_have_count(0)
        refused = page.goto(site.url + "/admin")
        assert refused is not None and refused.status == 404
    finally:
        _cli(site, "user", "admin", ANN)
