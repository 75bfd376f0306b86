"""Addresses made through the addy.io and SimpleLogin contracts forward like any other."""

from __future__ import annotations

import pytest

from tests.mail.conftest import Masks, Sink, counts, message, send_async

pytestmark = pytest.mark.anyio


async def test_compat_addresses_are_listed_and_forward(
    relay: int, sink: Sink, masks: Masks
) -> None:
    mask = await masks.make()
    key = mask.headers["Authorization"].removeprefix("Bearer ")
    addy = await mask.api.post(
        "/api/v1/aliases",
        headers={**mask.headers, "Content-Type": "application/json"},
        json={"domain": "relay.test", "description": "Website: shop.example."},
    )
    assert addy.status_code == 201, addy.text
    simple = await mask.api.post(
        "/api/alias/random/new?hostname=shop.example", headers={"Authentication": key}
    )
    assert simple.status_code == 201, simple.text
    made = [addy.json()["data"]["email"], simple.json()["alias"]]
    listed = (await mask.api.get("/v3/relay/addresses", headers=mask.headers)).json()
    by_address = {item["full_address"]: item for item in listed}
    assert set(made) <= set(by_address)
    for address in made:
        refused = await send_async(relay, "alice@example.com", [address], message(to=address))
        assert refused == {}
    assert [got.rcpt_tos for got in sink.messages] == [[mask.owner], [mask.owner]]
    for address in made:
        one = await mask.api.get(
            f"/v3/relay/addresses/{by_address[address]['id']}", headers=mask.headers
        )
        body = one.json()
        assert {k: body[k] for k in counts()} == counts(forwarded=1)
