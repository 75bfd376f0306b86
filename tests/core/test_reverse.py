"""Reverse alias local parts."""

from __future__ import annotations

import re
from pathlib import Path

import maskmail
from maskmail.core.reverse import alias_address, generate_alias_local, is_alias_local


def test_pinned_randomness_gives_a_pinned_alias() -> None:
    assert generate_alias_local(lambda n: b"\x00" * n) == "r." + "a" * 24


def test_aliases_are_random_and_cannot_look_like_relay_addresses() -> None:
    drawn = {generate_alias_local() for _ in range(200)}
    assert len(drawn) == 200
    for local in drawn:
        assert re.fullmatch(r"r\.[a-z2-7]{24}", local)
        assert is_alias_local(local)
    assert not is_alias_local("abcdefgh")


def test_a_reverse_alias_is_written_as_an_address_in_one_place() -> None:
    assert alias_address("r.abc", "relay.test") == "r.abc@relay.test"
    root = Path(maskmail.__file__).parent
    home = root / "core" / "reverse.py"
    # An alias and a domain joined by "@", in Python or in SQL.
    composed = re.compile(r"\{[^}]*alias[^}]*\}@\{|alias\s*\|\|\s*'@'", re.IGNORECASE)
    found = [
        f"{path.relative_to(root)}:{number}"
        for path in sorted(root.rglob("*.py"))
        if path != home
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if composed.search(line)
    ]
    assert found == []
