"""Verification mail to a mailbox is limited per user and per address, the code's
attempts follow the address across delete and re-add, and only a button press behind
the mailed link verifies (a link scanner's GET does not); on both backends."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.api.conftest import Caller, ClientFactory, UserFactory
from tests.api.test_mailboxes import MAILBOXES, _proof
from tests.sink import Sink

pytestmark = pytest.mark.anyio

STRANGER = "stranger@example.net"


@pytest.fixture
async def api(reconfigured: ClientFactory, sink: Sink) -> AsyncIterator[httpx.AsyncClient]:
    async with reconfigured(
        smarthost=f"127.0.0.1:{sink.port}", max_mailboxes_per_user=3, mailbox_verify_per_user=5
    ) as c:
        yield c


@pytest.fixture
async def carol(make_user: UserFactory) -> Caller:
    return await make_user("carol@example.com")


def _mails_to(sink: Sink, recipient: str) -> int:
    return sum(1 for m in sink.messages if [r.lower() for r in m.rcpt_tos] == [recipient.lower()])


async def _add_and_delete(api: httpx.AsyncClient, caller: Caller, email: str) -> httpx.Response:
    answer = await api.post(MAILBOXES, json={"email": email}, headers=caller.headers)
    if answer.status_code == 200:
        gone = await api.delete(f"{MAILBOXES}/{answer.json()['id']}", headers=caller.headers)
        assert gone.status_code == 204
    return answer


async def _emails(api: httpx.AsyncClient, caller: Caller) -> list[str]:
    return [m["email"] for m in (await api.get(MAILBOXES, headers=caller.headers)).json()]


@pytest.mark.slow
async def test_readding_one_address_mails_it_at_most_three_times_a_day(
    api: httpx.AsyncClient, carol: Caller, bob: Caller, sink: Sink
) -> None:
    answers = [await _add_and_delete(api, carol, STRANGER.upper()) for _ in range(15)]
    assert [a.status_code for a in answers] == [200] * 3 + [429] * 12
    refused = answers[-1]
    assert refused.json()["code"] == "rate_limited"
    assert "this mailbox" in refused.json()["message"]
    assert 0 < int(refused.headers["Retry-After"]) <= 24 * 3600
    assert _mails_to(sink, STRANGER.upper()) == 3
    # Refused: nothing written, nothing sent.
    assert STRANGER.upper() not in await _emails(api, carol)
    # Another account's limits are its own: the answer tells nothing of other accounts.
    assert (await api.post(MAILBOXES, json={"email": STRANGER}, headers=bob.headers)).is_success


async def test_the_per_user_limit_counts_every_address(
    api: httpx.AsyncClient, carol: Caller, sink: Sink
) -> None:
    answers = [await _add_and_delete(api, carol, f"n{n}@example.net") for n in range(8)]
    assert [a.status_code for a in answers] == [200] * 5 + [429] * 3
    assert "this account" in answers[-1].json()["message"]
    assert "Retry-After" in answers[-1].headers
    assert len(sink.messages) == 5
    assert await _emails(api, carol) == ["carol@example.com"]


async def test_wrong_codes_follow_the_address_across_delete_and_readd(
    api: httpx.AsyncClient, carol: Caller, sink: Sink
) -> None:
    first = await api.post(MAILBOXES, json={"email": STRANGER}, headers=carol.headers)
    _, code = _proof(sink, STRANGER)
    wrong = "000000" if code != "000000" else "111111"
    url = f"{MAILBOXES}/{first.json()['id']}/verify"
    for _ in range(3):
        answer = await api.post(url, json={"code": wrong}, headers=carol.headers)
        assert answer.status_code == 422
    await api.delete(f"{MAILBOXES}/{first.json()['id']}", headers=carol.headers)
    second = await api.post(MAILBOXES, json={"email": STRANGER}, headers=carol.headers)
    assert second.status_code == 200
    _, code = _proof(sink, STRANGER)
    wrong = "000000" if code != "000000" else "111111"
    url = f"{MAILBOXES}/{second.json()['id']}/verify"
    for _ in range(2):
        answer = await api.post(url, json={"code": wrong}, headers=carol.headers)
        assert answer.status_code == 422
    # Five tries spent on the address: even the right code waits now.
    spent = await api.post(url, json={"code": code}, headers=carol.headers)
    assert spent.status_code == 429 and "Retry-After" in spent.headers
    listed = (await api.get(MAILBOXES, headers=carol.headers)).json()
    assert listed[-1]["verified"] is False


async def test_a_prefetched_link_does_not_verify_the_button_does(
    api: httpx.AsyncClient, carol: Caller, sink: Sink
) -> None:
    await api.post(MAILBOXES, json={"email": STRANGER}, headers=carol.headers)
    token, _ = _proof(sink, STRANGER)
    for _ in range(2):  # a scanner, then the owner's own click
        page = await api.get(f"{MAILBOXES}/verify", params={"token": token})
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert (await api.get(MAILBOXES, headers=carol.headers)).json()[-1]["verified"] is False
    form = re.search(r'<form method="post" action="([^"]+)">\s*<button', page.text)
    assert form and form.group(1) == f"verify?token={token}"
    pressed = await api.post(f"{MAILBOXES}/verify", params={"token": token})
    assert pressed.status_code == 200, pressed.text
    assert STRANGER in pressed.text and "verified" in pressed.text
    assert (await api.get(MAILBOXES, headers=carol.headers)).json()[-1]["verified"] is True
    again = await api.post(f"{MAILBOXES}/verify", params={"token": token})
    assert again.status_code == 404


async def test_the_page_escapes_what_the_link_carries(api: httpx.AsyncClient) -> None:
    page = await api.get(f"{MAILBOXES}/verify", params={"token": '"><script>x</script>'})
    # The layout loads its own scripts; the token's never becomes one.
    assert page.status_code == 200 and "<script>x" not in page.text
    assert 'action="verify?token=%22%3E%3Cscript%3Ex%3C%2Fscript%3E"' in page.text
    assert page.headers["cache-control"] == "no-store"
