"""The outbound path a workflow sends its own messages through (verification codes,
domain warnings): the entry point hands it in, a smarthost or the Maildir outbox."""

from __future__ import annotations

from typing import Protocol


class Sender(Protocol):
    """The outbound path (smarthost or Maildir outbox) the entry point hands the app."""

    async def deliver(self, message: bytes, *, sender: str, recipient: str) -> None: ...

    async def close(self) -> None: ...
