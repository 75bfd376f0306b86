"""Address generation, the blocklist, tombstones and owner mailboxes (SPEC decision 6)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from maskmail.core import addresses
from maskmail.core.errors import InvalidAddress


def pinned(*words: str) -> addresses.Chooser:
    """A chooser that spells the given words one after another."""
    letters: Iterator[str] = iter("".join(words))
    return lambda alphabet: next(letters)


def test_generated_local_part_has_the_length_and_alphabet() -> None:
    for length in (6, 8, 20):
        local = addresses.generate_local_part(length)
        assert re.fullmatch(rf"[a-z0-9]{{{length}}}", local)


def test_lengths_below_six_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 6"):
        addresses.generate_local_part(5)


@pytest.mark.parametrize("word", ["postmaster", "abuse", "admin", "noreply", "fuck"])
def test_blocked_words_are_drawn_again(word: str) -> None:
    blocked = word.ljust(10, "7")
    local = addresses.generate_local_part(10, pinned(blocked, "k" * 10))
    assert local == "k" * 10


def test_blocked_word_inside_a_local_part_is_caught() -> None:
    assert addresses.is_blocked("x9admin1")
    assert addresses.is_blocked("ABUSE123")
    assert not addresses.is_blocked("k3v9q2mz")


@pytest.mark.parametrize("word", sorted(addresses.BLOCKLIST))
def test_every_blocked_word_is_caught_anywhere_in_any_case(word: str) -> None:
    assert addresses.is_blocked(f"7{word.upper()}x")


def test_hyphen_at_either_end_is_drawn_again() -> None:
    local = addresses.generate_local_part(6, pinned("-abcde", "abcde-", "qwerty"))
    assert local == "qwerty"


def test_generation_uses_all_of_the_alphabet() -> None:
    seen = set("".join(addresses.generate_local_part(8) for _ in range(400)))
    assert seen == set(addresses.ALPHABET)


def test_every_position_of_a_drawn_local_part_ranges_over_the_alphabet() -> None:
    # One draw spells the whole local part: a range too small would pin its last
    # characters, a wrong spelling would repeat one position in another.
    drawn = [addresses.generate_local_part(12) for _ in range(2000)]
    for position in range(12):
        assert {local[position] for local in drawn} == set(addresses.ALPHABET)
    assert len(set(drawn)) == len(drawn)


def test_a_number_is_spelled_least_significant_digit_first() -> None:
    base = len(addresses.ALPHABET)
    assert addresses._spelled(0, 6) == "aaaaaa"
    assert addresses._spelled(1 + 2 * base, 6) == "bcaaaa"
    assert addresses._spelled(base**6 - 1, 6) == "999999"


def test_tombstone_is_sha256_and_ignores_case() -> None:
    digest = addresses.tombstone("Abc123@Relay.Test")
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    assert digest == addresses.tombstone("abc123@relay.test")
    assert digest != addresses.tombstone("abc124@relay.test")


def test_full_address_with_and_without_subdomain() -> None:
    assert addresses.full_address("abc", "relay.test") == "abc@relay.test"
    assert addresses.full_address("abc", "relay.test", "me") == "abc@me.relay.test"


def test_mailbox_domain_is_lowered_and_local_part_kept() -> None:
    assert addresses.normalize_mailbox("Ann.Lee@Example.COM") == "Ann.Lee@example.com"


@pytest.mark.parametrize(
    "bad", ["no-at-sign", "a@b@c.com", "a@example.com\r\nBcc: x@y.z", " a@example.com", "a@"]
)
def test_bad_mailboxes_are_refused(bad: str) -> None:
    with pytest.raises(InvalidAddress):
        addresses.normalize_mailbox(bad)
