"""The invitation rules: durations, tokens, states, links."""

from __future__ import annotations

import pytest

from maskmail.core.errors import InvalidAddress
from maskmail.core.invitations import (
    Invitation,
    InvitationInvalid,
    State,
    check_token,
    digest,
    new_token,
    parse_duration,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("7d", 604_800), ("12h", 43_200), ("30m", 1800), ("2w", 1_209_600), (" 1D ", 86_400)],
)
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "7", "d", "7y", "-1d", "0m", "91d", "1.5h", "7 days"])
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(InvalidAddress):
        parse_duration(text)


def test_tokens_are_random_and_hashed() -> None:
    a, b = new_token(), new_token()
    assert a != b and a.startswith("mmi_") and len(a) < 64
    assert digest(a) != digest(b) and len(digest(a)) == 64
    assert check_token(f" {a} ") == a


@pytest.mark.parametrize("token", ["", "abc", "mm_live_x", "mmi_" + "a" * 200])
def test_tokens_that_cannot_be_ours(token: str) -> None:
    with pytest.raises(InvitationInvalid):
        check_token(token)


def test_states() -> None:
    base = Invitation(1, 100, 200, None, None, None, None)
    assert base.state(150) is State.OPEN
    assert base.state(200) is State.EXPIRED
    assert Invitation(1, 100, 200, None, 120, 7, None).state(300) is State.USED
    assert Invitation(1, 100, 200, None, None, None, 130).state(150) is State.REVOKED
