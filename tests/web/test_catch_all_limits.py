"""The dashboard under issue 21 items 2 and 3: the owner sees why their catch-all makes no
new address (the rate or the cap of addresses made on first mail), and subdomain names
follow the reservation and the day's limit, with messages a person can act on."""

from __future__ import annotations

import re
from html import unescape

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.config import Settings
from maskmail.core.first_mail import OwnerLimits
from maskmail.store import first_mail, subdomains
from maskmail.store.addresses import Place, delete_address, list_addresses
from maskmail.store.clock import now
from maskmail.store.driver import as_driver
from tests.api.conftest import make_settings
from tests.support import add_custom_domain
from tests.web.conftest import Db, Person, SignIn

pytestmark = pytest.mark.anyio

PER_HOUR, KEPT = 2, 3
_NOTICE = re.compile(r'<p class="warning" id="catch-all-paused" role="status">([^<]*)</p>')


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(
        database_url,
        first_mail_per_hour=PER_HOUR,
        first_mail_max=KEPT,
        subdomain_names_per_day=2,
        smtp_hostname="inbound.relay.test",
    )


async def _made(
    conn: AsyncConnection, user_id: int, local: str, *, domain: str, on: str | None, at: int
) -> None:
    """An address made on first mail, as the mail plane makes it, at time ``at``."""
    await first_mail.make(
        await as_driver(conn),
        user_id,
        domain=domain,
        local=local,
        place=Place.SUBDOMAIN if on else Place.DOMAIN,
        on=on,
        description="first mail from a@shop.example",
        address_limit=0,
        limits=OwnerLimits(),
        now=at,
    )


async def _backdate(conn: AsyncConnection, user_id: int, seconds: int) -> None:
    """Move the owner's addresses made on first mail into the past."""
    await conn.exec_driver_sql(
        f"UPDATE first_mail_addresses SET created_time = created_time - {seconds} "
        f"WHERE user_id = {user_id}"
    )


async def _notice(person: Person, path: str) -> str | None:
    found = _NOTICE.search((await person.client.get(path)).text)
    return unescape(found.group(1)) if found else None


async def test_the_subdomain_page_says_when_and_why_catch_all_is_paused(
    sign_in: SignIn, db: Db
) -> None:
    ann = await sign_in("ann@example.com")
    assert (await ann.post("/subdomain", {"subdomain": "anns"})).status_code == 303
    assert await _notice(ann, "/subdomain") is None
    for local in ("one", "two"):
        await db.write(_made, ann.user_id, local, domain="relay.test", on="anns", at=now())
    rate = await _notice(ann, "/subdomain")
    assert rate is not None and "Catch-all paused: 2 addresses were made on first mail" in rate
    assert "in the last hour" in rate
    # An hour on, the rate no longer holds; a third kept one reaches the cap.
    await db.write(_backdate, ann.user_id, 3600)
    assert await _notice(ann, "/subdomain") is None
    await db.write(_made, ann.user_id, "three", domain="relay.test", on="anns", at=now())
    cap = await _notice(ann, "/subdomain")
    assert cap is not None and "you keep 3 addresses made on first mail" in cap
    assert "delete some" in cap
    # Deleting one makes room; catch-all switched off needs no notice either.
    first, *_ = await db.read(list_addresses, ann.user_id)
    await db.write(delete_address, ann.user_id, first.id)
    assert await _notice(ann, "/subdomain") is None
    await db.write(_made, ann.user_id, "four", domain="relay.test", on="anns", at=now())
    assert await _notice(ann, "/subdomain") is not None
    [sub] = await db.read(subdomains.list_subdomains, ann.user_id)
    assert (await ann.post(f"/subdomain/{sub.id}", {"catch_all": "false"})).status_code == 303
    assert await _notice(ann, "/subdomain") is None


async def _verified_domain(conn: AsyncConnection, user_id: int, name: str) -> None:
    await add_custom_domain(conn, user_id, name, relay_domain="relay.test")


async def test_the_domains_page_says_so_too(sign_in: SignIn, db: Db) -> None:
    """The limits are the owner's, over every catch-all: made at a custom domain, the
    notice shows on both pages."""
    bea = await sign_in("bea@example.com")
    await db.write(_verified_domain, bea.user_id, "bea.example")
    await bea.post("/subdomain", {"subdomain": "beas"})
    assert await _notice(bea, "/domains") is None
    for local in ("one", "two"):
        await db.write(_made, bea.user_id, local, domain="bea.example", on=None, at=now())
    for path in ("/domains", "/subdomain"):
        shown = await _notice(bea, path)
        assert shown is not None and "2 addresses were made on first mail" in shown, path


async def test_subdomain_names_follow_the_reservation_and_the_days_limit(
    sign_in: SignIn, db: Db
) -> None:
    cat = await sign_in("cat@example.com")
    for name, says in (
        ("Shop", "written in lower case: &#39;shop&#39;, not &#39;Shop&#39;"),
        ("shop.", "one name without dots"),
        ("autodiscover", "This subdomain is not available."),
        ("inbound", "This subdomain is not available."),
    ):
        answer = await cat.post("/subdomain", {"subdomain": name})
        assert answer.status_code == 422 and says in answer.text, (name, answer.text)
    assert (await cat.post("/subdomain", {"subdomain": "cats"})).status_code == 303
    [sub] = await db.read(subdomains.list_subdomains, cat.user_id)
    path = f"/subdomain/{sub.id}/rename"
    asked = await cat.post(path, {"subdomain": "mta-sts"})
    assert asked.status_code == 422 and "not available" in asked.text
    done = await cat.post(path, {"subdomain": "cats-two", "confirmed": "yes"})
    assert done.status_code == 303
    # Two names a day: the third is refused with the wait, and nothing changes.
    refused = await cat.post(path, {"subdomain": "cats-three", "confirmed": "yes"})
    assert refused.status_code == 429 and "2 subdomain names in a day" in refused.text
    [kept] = await db.read(subdomains.list_subdomains, cat.user_id)
    assert kept.subdomain == "cats-two"
