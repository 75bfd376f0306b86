"""The periodic re-check (issue 16 item 2): records that went away are marked, and the
owner is told once, at their default mailbox, through the outbound path."""

from __future__ import annotations

from email import message_from_bytes, policy
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.mail.plane import outbound_for
from maskmail.services.domain_checks import check_all
from maskmail.store import custom_domains
from maskmail.store.engine import transaction
from tests.dns_server import running_dns
from tests.mail.conftest import HOST, Sink, mail_settings
from tests.mail.test_custom_domains import ZONE, _domain

pytestmark = pytest.mark.anyio


def _publish_all(name: str, token: str, dkim_txt: str) -> None:
    ZONE[f"{name}."] = [
        ("TXT", f'"maskmail-verification={token}"'),
        ("TXT", '"v=spf1 include:relay.test ~all"'),
        ("MX", "10 relay.test."),
    ]
    ZONE[f"_dmarc.{name}."] = [("TXT", '"v=DMARC1; p=reject"')]


@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
async def test_records_that_went_away_warn_the_owner_once(
    database_url: str, tmp_path: Path, sink: Sink, relay_engine: AsyncEngine
) -> None:
    user_id, mailbox, name = await _domain(relay_engine, verified=False)
    async with relay_engine.connect() as conn:
        [found] = await custom_domains.list_domains(conn, user_id)
    _publish_all(name, found.token, found.dkim_txt)
    with running_dns(ZONE) as port:
        settings = mail_settings(
            database_url,
            tmp_path,
            smarthost=f"{HOST}:{sink.port}",
            dns_resolver=f"127.0.0.1:{port}",
        )
        outbound = outbound_for(settings)
        try:
            first = await check_all(settings, relay_engine, outbound)
            del ZONE[f"_dmarc.{name}."]
            ZONE[f"{name}."] = ZONE[f"{name}."][:1]  # SPF and MX removed
            second = await check_all(settings, relay_engine, outbound)
            third = await check_all(settings, relay_engine, outbound)
        finally:
            await outbound.close()
    mine = [next(o for o in run if o.domain == name) for run in (first, second, third)]
    async with relay_engine.connect() as conn:
        [after] = await custom_domains.list_domains(conn, user_id)
    # The first run found everything (the pending domain is verified by it).
    assert mine[0].gone == [] and not mine[0].warned
    assert mine[1].gone == ["mx", "spf", "dmarc"] and mine[1].warned
    # Marked already: no second warning while the records stay away.
    assert mine[2].gone == [] and not mine[2].warned
    assert after.verified
    assert after.checks == {
        "ownership": True,
        "mx": False,
        "spf": False,
        "dkim": True,
        "dmarc": False,
    }
    assert after.warned_time is not None
    warnings = [m for m in sink.messages if m.rcpt_tos == [mailbox]]
    assert len(warnings) == 1 and warnings[0].mail_from == "<>"  # the null sender
    text = message_from_bytes(warnings[0].data, policy=policy.default)
    assert name in str(text["Subject"])
    assert "MX, SPF, DMARC" in text.get_body().get_content()  # type: ignore[union-attr]

    # Back again: the warning is cleared, so a later loss warns anew.
    _publish_all(name, found.token, found.dkim_txt)
    with running_dns(ZONE) as port:
        settings = settings.model_copy(update={"dns_resolver": f"127.0.0.1:{port}"})
        outbound = outbound_for(settings)
        try:
            await check_all(settings, relay_engine, outbound)
        finally:
            await outbound.close()
    async with transaction(relay_engine) as conn:
        [healed] = await custom_domains.list_domains(conn, user_id)
    assert healed.warned_time is None and all(healed.checks.values())
