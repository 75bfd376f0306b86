"""Reverse alias local parts."""

from __future__ import annotations

import re

from maskmail.core.reverse import generate_alias_local, is_alias_local


def test_pinned_randomness_gives_a_pinned_alias() -> None:
    assert generate_alias_local(lambda n: b"\x00" * n) == "r." + "a" * 24


def test_aliases_are_random_and_cannot_look_like_relay_addresses() -> None:
    drawn = {generate_alias_local() for _ in range(200)}
    assert len(drawn) == 200
    for local in drawn:
        assert re.fullmatch(r"r\.[a-z2-7]{24}", local)
        assert is_alias_local(local)
    assert not is_alias_local("abcdefgh")
