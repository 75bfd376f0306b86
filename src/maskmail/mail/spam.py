"""The mail plane's spam check, by the spam rules (``core/spam.py``): is this message
spam? Upstream filter headers from trusted relays, and rspamd if set."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from maskmail.core import spam as rules

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SpamCheck:
    """What the spam check found about one message."""

    spam: bool
    # The connecting host is a trusted relay: its filter's verdict headers count, and a
    # forward keeps them.
    trusted: bool


class SpamJudge:
    def __init__(
        self,
        trusted: Sequence[rules.Network],
        rspamd_url: str = "",
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.trusted = tuple(trusted)
        self.rspamd_url = rspamd_url.rstrip("/")
        self.client = client

    def trusts(self, peer_ip: str | None) -> bool:
        return rules.is_trusted(peer_ip, self.trusted)

    async def check(
        self,
        *,
        peer_ip: str | None,
        fields: Sequence[tuple[str, str]],
        message: bytes,
        helo: str | None,
        mail_from: str,
        recipient: str,
    ) -> SpamCheck:
        """Spam when a trusted relay's filter says so, else as rspamd (if set) says."""
        trusted = self.trusts(peer_ip)
        if trusted and rules.headers_say_spam(fields):
            return SpamCheck(spam=True, trusted=trusted)
        if self.rspamd_url and self.client is not None:
            spam = await self._ask_rspamd(message, peer_ip, helo, mail_from, recipient)
            return SpamCheck(spam, trusted)
        return SpamCheck(spam=False, trusted=trusted)

    async def _ask_rspamd(
        self, message: bytes, peer_ip: str | None, helo: str | None, mail_from: str, rcpt: str
    ) -> bool:
        """rspamd's verdict over its HTTP API (``/checkv2``).

        When rspamd cannot answer, the message is judged ham: a filter outage must not
        stop mail, and the owner's own filters still see it.
        """
        headers = {"From": mail_from, "Rcpt": rcpt}
        if peer_ip:
            headers["IP"] = peer_ip
        if helo:
            headers["Helo"] = helo
        try:
            response = await self.client.post(  # type: ignore[union-attr]
                f"{self.rspamd_url}/checkv2", content=message, headers=_ascii_only(headers)
            )
            response.raise_for_status()
            action = response.json().get("action", "")
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            log.warning("rspamd did not answer, judging as ham: %s", type(exc).__name__)
            return False
        return isinstance(action, str) and rules.rspamd_action_is_spam(action)


def _ascii_only(headers: dict[str, str]) -> dict[str, str]:
    """HTTP header values must be ASCII; a UTF-8 address is left out rather than mangled."""
    return {k: v for k, v in headers.items() if v.isascii() and "\r" not in v and "\n" not in v}
