"""The dashboard's common frame and controls, in the HTML every page is sent with: the
header marks the page you are on, switches say their state (in the list and on one
address's page), deleting and renaming ask first (in a dialog with script, on a page
without), and the chart reads as a chart."""

from __future__ import annotations

import re

import pytest

from maskmail.store import addresses as store
from maskmail.store import subdomains
from maskmail.store.activity import Day
from maskmail.web import chart
from tests.web.conftest import Db, SignIn

pytestmark = pytest.mark.anyio

CURRENT = re.compile(r'<a href="([^"]*)" aria-current="page">([^<]+)</a>')
SWITCH = re.compile(r'role="switch"[^>]*aria-checked="(\w+)" aria-label="([^"]+)">([^<]+)<')


@pytest.mark.parametrize(
    ("path", "marked"),
    [
        ("/", "Addresses"),
        ("/addresses/1", "Addresses"),
        ("/mailboxes", "Mailboxes"),
        ("/subdomain", "Subdomain"),
        ("/domains", "Domains"),
        ("/activity", "Activity"),
        ("/keys", "API keys"),
        ("/help/clients", "API keys"),
        ("/password", "Password"),
    ],
)
@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
async def test_the_header_marks_the_page_you_are_on(
    sign_in: SignIn, path: str, marked: str
) -> None:
    ann = await sign_in("cora@example.com")
    await ann.post("/addresses")
    html = (await ann.client.get(path)).text
    assert [name for _, name in CURRENT.findall(html)] == [marked]
    # The pages fold into a menu that opens without script.
    assert '<details class="menu">' in html and "<summary>Menu</summary>" in html


async def test_signed_out_pages_show_the_name_and_no_menu(sign_in: SignIn) -> None:
    ann = await sign_in("dora@example.com")
    await ann.client.post("/sign-out", data={"csrf": await ann.csrf()})
    html = (await ann.client.get("/")).text
    assert 'class="brand"' in html and ">maskmail</a>" in html
    assert "details" not in html and "aria-current" not in html


@pytest.mark.slow
async def test_switches_say_their_state(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("edna@example.com")
    await ann.post("/addresses")
    (made,) = await db.read(store.list_addresses, ann.user_id)
    await ann.post(f"/addresses/{made.id}", {"enabled": "false"})
    html = (await ann.client.get("/")).text
    switches = SWITCH.findall(html)
    assert switches == [
        ("false", "Enabled", "Disabled"),
        ("false", "Block spam", "Not blocking spam"),
    ]
    await ann.post(f"/addresses/{made.id}", {"enabled": "true", "block_spam": "true"})
    html = (await ann.client.get("/")).text
    switches = SWITCH.findall(html)
    assert switches == [("true", "Enabled", "Enabled"), ("true", "Block spam", "Blocking spam")]


async def test_one_address_has_the_lists_switches(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("eric@example.com")
    await ann.post("/addresses")
    (made,) = await db.read(store.list_addresses, ann.user_id)
    here = f"/addresses/{made.id}"
    html = (await ann.client.get(here)).text
    assert SWITCH.findall(html) == [
        ("true", "Enabled", "Enabled"),
        ("false", "Block spam", "Not blocking spam"),
    ]
    # Without script the form posts, and the browser comes back to this page.
    assert f'<input type="hidden" name="back" value="{here}">' in html
    done = await ann.post(here, {"enabled": "false", "back": here})
    assert done.status_code == 303 and done.headers["location"] == here
    assert SWITCH.findall((await ann.client.get(here)).text)[0] == ("false", "Enabled", "Disabled")
    # With htmx the answer is the switches alone, which replace themselves (not a row).
    headers = {"Origin": "http://testserver", "HX-Request": "true", "HX-Target": "switches"}
    body = {"csrf": await ann.csrf(), "block_spam": "true", "back": here}
    part = (await ann.client.post(here, data=body, headers=headers)).text
    assert part.startswith('<form class="switches"') and 'id="switches"' in part
    assert "<tr" not in part and SWITCH.findall(part)[1] == ("true", "Block spam", "Blocking spam")
    (now,) = await db.read(store.list_addresses, ann.user_id)
    assert (now.enabled, now.block_spam) == (False, True)
    # A row of the list still gets its row back.
    headers["HX-Target"] = f"row-{made.id}"
    row = (await ann.client.post(here, data={"csrf": body["csrf"]}, headers=headers)).text
    assert row.startswith(f'<tr id="row-{made.id}">')


async def test_an_empty_list_says_what_to_do_first(sign_in: SignIn) -> None:
    ann = await sign_in("fern@example.com")
    html = (await ann.client.get("/")).text
    assert "Start with a new address" in html and "Press “New address”" in html
    searched = (await ann.client.get("/?q=nothing")).text
    assert "No address matches “nothing”." in searched and "Start with" not in searched


async def test_delete_asks_in_a_dialog_or_on_a_page(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("gina@example.com")
    await ann.post("/addresses")
    (made,) = await db.read(store.list_addresses, ann.user_id)
    listing = (await ann.client.get("/")).text
    # The form leads to the page that asks; app.js shows that page's question in a dialog.
    assert f'action="/addresses/{made.id}/delete" data-confirm>' in listing
    asking = (await ann.client.get(f"/addresses/{made.id}/delete")).text
    assert '<div class="question card">' in asking
    assert 'href="/" data-cancel>Cancel</a>' in asking


def _days(*counts: tuple[int, int, int, int]) -> list[Day]:
    return [Day(20_000 + i, *c) for i, c in enumerate(counts)]


@pytest.mark.parametrize(
    ("peak", "marks"),
    [
        (0, [0, 1]),
        (3, [0, 1, 2, 3]),
        (4, [0, 1, 2, 3, 4]),
        (5, [0, 2, 4, 6]),
        (29, [0, 10, 20, 30]),
        (41, [0, 20, 40, 60]),
        (1000, [0, 500, 1000]),
    ],
)
def test_grid_lines_fall_on_round_counts(peak: int, marks: list[int]) -> None:
    assert chart.ticks(peak) == marks


def test_the_chart_has_axes_and_a_named_day_each() -> None:
    drawn = str(chart.svg(_days((3, 1, 0, 0), (0, 0, 0, 0), (5, 0, 2, 1)), "Activity"))
    assert drawn.count('class="grid"') == 4 and drawn.count('class="axis"') == 1
    assert re.findall(r'<text class="count"[^>]*>(\d+)</text>', drawn) == ["0", "2", "4", "6", "8"]
    # Dates under the bars: the last one ends at the right edge instead of leaving it.
    assert 'text-anchor="end" aria-hidden="true">Oct 06</text>' in drawn
    names = re.findall(r'<g class="day" tabindex="0" role="img" aria-label="([^"]+)">', drawn)
    assert names[0] == "Oct 04: 3 forwarded, 1 blocked, 0 spam, 0 replied"
    assert len(names) == 3 and drawn.count('<svg class="tip"') == 3


async def test_no_activity_is_said_not_drawn(sign_in: SignIn) -> None:
    ann = await sign_in("hana@example.com")
    html = (await ann.client.get("/activity")).text
    assert "No mail in the last 30 days yet." in html and '<svg class="chart"' not in html


async def test_a_rename_asks_in_a_dialog_or_on_a_page(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("hana@example.com")
    await ann.post("/subdomain", {"subdomain": "hanas"})
    (sub,) = await db.read(subdomains.list_subdomains, ann.user_id)
    page = (await ann.client.get("/subdomain")).text
    # The form posts the new name to a page that asks; app.js shows its question in a dialog.
    assert f'<form method="post" data-confirm action="/subdomain/{sub.id}/rename"' in page
    asking = await ann.post(f"/subdomain/{sub.id}/rename", {"subdomain": "hanas-two"})
    assert asking.status_code == 200 and '<div class="question card">' in asking.text
    assert 'href="/subdomain" data-cancel>Cancel</a>' in asking.text
    (still,) = await db.read(subdomains.list_subdomains, ann.user_id)
    assert still.subdomain == "hanas"
