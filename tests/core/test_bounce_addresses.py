"""Signed bounce addresses verify, and forged or stale ones do not."""

from __future__ import annotations

from maskmail.core.bounce_addresses import DAY, BounceOf, bounce_address, bounced

SECRET = b"k" * 32
NOW = 1_790_000_000


def local_of(address: str) -> str:
    return address.rpartition("@")[0]


def test_round_trip() -> None:
    address = bounce_address(42, NOW, SECRET, "relay.test")
    assert address.endswith("@relay.test")
    assert bounced(local_of(address), NOW + DAY, SECRET) == BounceOf(42, None)
    assert bounced(local_of(address).upper(), NOW, SECRET) == BounceOf(42, None)


def test_forged_and_expired_fail() -> None:
    local = local_of(bounce_address(42, NOW, SECRET, "relay.test"))
    assert bounced(local, NOW, b"other secret") is None
    assert bounced(local.replace("+42.", "+43."), NOW, SECRET) is None
    assert bounced(local, NOW + 8 * DAY, SECRET) is None
    assert bounced(local, NOW - 2 * DAY, SECRET) is None
    for junk in ("bounce", "bounce+", "bounce+1.2", "other+1.2.abc", "bounce+x.2.abc"):
        assert bounced(junk, NOW, SECRET) is None


def test_signature_depends_on_the_address() -> None:
    a = bounce_address(1, NOW, SECRET, "relay.test")
    b = bounce_address(2, NOW, SECRET, "relay.test")
    assert a.split(".")[-2:] != b.split(".")[-2:]


def test_a_copys_bounce_address_names_its_mailbox() -> None:
    local = local_of(bounce_address(42, NOW, SECRET, "relay.test", mailbox_id=7))
    assert local.startswith("bounce+42-7.")
    assert bounced(local, NOW, SECRET) == BounceOf(42, 7)
    # Another mailbox, or none, under the same signature is forged.
    assert bounced(local.replace("-7.", "-8."), NOW, SECRET) is None
    assert bounced(local.replace("-7.", "."), NOW, SECRET) is None
    assert bounced(local.replace("-7.", "-."), NOW, SECRET) is None
    assert bounced(local_of(bounce_address(42, NOW, SECRET, "relay.test")), NOW, SECRET) == (
        BounceOf(42, None)
    )


def test_a_bounce_tells_the_end_of_the_day_it_was_signed() -> None:
    """What it names was made before then; a row made later only took a gone row's id."""
    found = bounced(local_of(bounce_address(42, NOW, SECRET, "relay.test", 7)), NOW + DAY, SECRET)
    assert found is not None
    assert found.made_before == (NOW // DAY + 1) * DAY
    assert NOW < found.made_before <= NOW + DAY
