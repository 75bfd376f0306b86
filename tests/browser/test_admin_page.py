"""The admin page in a real browser (issue 24 item 6): hidden from a user who is not an
admin, then each action an admin takes, checked through the API and the audit log, with
axe-core on every state."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import USERS, Site, serious_violations, sign_in
from tests.support import run_cli

pytestmark = pytest.mark.slow
ANN, BOB = USERS


def _no_serious_violations(page: Page) -> None:
    assert serious_violations(page) == [], page.url


def _sign_out(page: Page) -> None:
    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("button", name="Sign in").wait_for()


def test_the_admin_page_end_to_end(page: Page, site: Site) -> None:
    # Bob is no admin: /admin reads exactly as a path that does not exist.
    sign_in(page, site, BOB)
    unknown = page.goto(site.url + "/no-such-page")
    assert unknown is not None
    unknown_text = page.content()
    hidden = page.goto(site.url + "/admin")
    assert hidden is not None and hidden.status == unknown.status == 404
    assert page.content() == unknown_text
    page.goto(site.url + "/")
    _sign_out(page)

    made = run_cli(site.env, "user", "admin", ANN)
    assert made.returncode == 0, made.stderr
    sign_in(page, site, ANN)
    page.goto(site.url + "/admin")
    expect(page.get_by_role("heading", name="Admin: users")).to_be_visible()
    expect(page.get_by_role("cell", name=BOB, exact=True)).to_be_visible()
    _no_serious_violations(page)

    with site.api(BOB) as api:
        page.get_by_role("link", name=f"Manage {BOB}").click()
        expect(page.get_by_role("heading", name=f"Admin: {BOB}")).to_be_visible()
        _no_serious_violations(page)
        page.get_by_label("Addresses (0)").fill("1")
        page.get_by_role("button", name="Save limits").click()
        expect(page.get_by_label("Addresses (0)")).to_have_value("1")
        before = len(api.get("/v3/relay/addresses").json())
        created = api.post("/v3/relay/addresses")
        assert created.status_code == (200 if before == 0 else 403)
        assert api.post("/v3/relay/addresses").status_code == 403

        page.get_by_role("button", name="Disable this user").click()
        expect(page.get_by_text("disabled", exact=True)).to_be_visible()
        _no_serious_violations(page)
        assert api.get("/v3/relay/addresses").status_code == 401
        page.get_by_role("button", name="Enable this user").click()
        expect(page.get_by_role("button", name="Disable this user")).to_be_visible()
        assert api.get("/v3/relay/addresses").status_code == 200

    nav = page.get_by_role("navigation", name="Admin")
    nav.get_by_role("link", name="Invitations").click()
    page.get_by_label("Good for").fill("2d")
    page.get_by_role("button", name="Make invitation").click()
    link = page.locator("#new-invitation")
    expect(link).to_contain_text("/sign-up?invite=mmi_")
    page.get_by_role("button", name="Copy the new link").click()
    assert page.evaluate("navigator.clipboard.readText()") == link.inner_text()
    _no_serious_violations(page)
    page.get_by_role("button", name="Revoke invitation").first.click()
    expect(page.get_by_role("cell", name="revoked", exact=True)).to_be_visible()

    nav.get_by_role("link", name="Audit log").click()
    rows = page.locator("table.audit tbody tr")
    expect(rows.first).to_contain_text("revoke invitation")
    expect(rows).to_have_count(6)  # make admin, limits, disable, enable, invite, revoke
    _no_serious_violations(page)

    # Ann cannot disable or delete herself; Bob she deletes, after the question.
    page.goto(site.url + "/admin")
    page.get_by_role("link", name=f"Manage {ANN}").click()
    expect(page.get_by_text("You cannot disable or delete your own account.")).to_be_visible()
    page.goto(site.url + "/admin")
    page.get_by_role("link", name=f"Manage {BOB}").click()
    page.get_by_role("link", name="Delete this user…").click()
    expect(page.get_by_role("heading")).to_contain_text("Delete the user")
    _no_serious_violations(page)
    page.get_by_role("button", name="Delete").click()
    expect(page.get_by_role("heading", name="Admin: users")).to_be_visible()
    expect(page.get_by_role("cell", name=BOB, exact=True)).to_have_count(0)
    with site.api(BOB) as api:
        assert api.get("/v3/relay/addresses").status_code == 401
