"""Custom domain rules: which names may be added, and how DNS answers are judged."""

from __future__ import annotations

import pytest

from maskmail.core.custom_domains import Expected, Found, check_domain, judge, went_away
from maskmail.core.errors import InvalidAddress

EXPECTED = Expected(
    "example.org", "tok", "sel", "v=DKIM1; k=rsa; p=KEY", "mx.relay.test", "relay.test"
)
ALL = Found(
    domain_txt=["maskmail-verification=tok", "v=spf1 include:relay.test ~all"],
    mx_hosts=["mx.relay.test."],
    dkim_txt=["v=DKIM1; k=rsa; p=KEY"],
    dmarc_txt=["v=DMARC1; p=reject"],
)


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        ("Example.ORG.", "example.org"),
        (" mail.example.org ", "mail.example.org"),
        ("bücher.example", "xn--bcher-kva.example"),
    ],
)
def test_names_are_kept_in_one_form(raw: str, kept: str) -> None:
    assert check_domain(raw) == kept


@pytest.mark.parametrize("bad", ["localhost", "1.2.3.4", "-a.example", "a..b", "a_b.example", ""])
def test_bad_names(bad: str) -> None:
    with pytest.raises(InvalidAddress):
        check_domain(bad)


def test_everything_published_passes() -> None:
    assert judge(EXPECTED, ALL, {}) == dict.fromkeys(
        ("ownership", "mx", "spf", "dkim", "dmarc"), True
    )


def test_two_spf_records_or_a_weak_dmarc_fail() -> None:
    found = Found(
        domain_txt=[*(ALL.domain_txt or []), "v=spf1 -all"],
        mx_hosts=ALL.mx_hosts,
        dkim_txt=["v=DKIM1; k=rsa; p=OTHER"],
        dmarc_txt=["v=DMARC1; p=none"],
    )
    checks = judge(EXPECTED, found, {})
    assert checks["ownership"] and checks["mx"]
    assert not checks["spf"] and not checks["dkim"] and not checks["dmarc"]


def test_a_failed_look_up_keeps_the_last_result() -> None:
    before = {"ownership": True, "mx": True, "spf": False, "dkim": True, "dmarc": True}
    after = judge(EXPECTED, Found(None, None, [], None), before)
    assert after == {**before, "dkim": False}
    assert went_away(before, after) == ["dkim"]
