"""The spam rules: reading the verdicts upstream filters add as headers, and rspamd's
answer. The mail plane's ``mail/spam.py`` asks for them."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# Every header a filter uses to say what it thought. They are trusted only from a
# trusted relay, and removed from anything else so a sender cannot vouch for itself.
VERDICT_HEADERS = frozenset(
    {
        "x-spam-flag",  # SpamAssassin: YES / NO
        "x-spam-status",  # SpamAssassin: "Yes, score=..." / "No, score=..."
        "x-spam-level",
        "x-spam-score",
        "x-spam",  # rspamd milter_headers "spam-header": Yes
        "x-spamd-result",  # rspamd: "default: True [12.0 / 15.0]"
        "x-rspamd-action",  # rspamd: "reject", "add header", "no action", ...
        "x-rspamd-score",
        "x-rspamd-server",
        "x-rspamd-queue-id",
    }
)
# rspamd actions that mean "this is spam"; greylist and soft reject are about rate, not content.
RSPAMD_SPAM_ACTIONS = frozenset({"reject", "add header", "rewrite subject"})


def is_trusted(peer_ip: str | None, networks: Sequence[Network]) -> bool:
    """True when the connecting host is one of the trusted relays."""
    if not peer_ip:
        return False
    try:
        ip = ipaddress.ip_address(peer_ip.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in network for network in networks)


def _yes(value: str) -> bool:
    return value.strip().lower().startswith(("yes", "true"))


def headers_say_spam(fields: Iterable[tuple[str, str]]) -> bool:
    """True when any filter verdict header says spam.

    Any "yes" wins: a filter that marks spam is believed even if a sender forged a "no"
    lower down, and a forged "yes" only hurts the message that carries it.
    """
    for name, value in fields:
        key = name.strip().lower()
        if key in {"x-spam-flag", "x-spam-status", "x-spam"} and _yes(value):
            return True
        if key == "x-spamd-result" and value.strip().lower().startswith("default: true"):
            return True
        if key == "x-rspamd-action" and rspamd_action_is_spam(value):
            return True
    return False


def rspamd_action_is_spam(action: str) -> bool:
    return " ".join(action.lower().split()) in RSPAMD_SPAM_ACTIONS
