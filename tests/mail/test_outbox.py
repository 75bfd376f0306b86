"""The local Maildir outbox, when maskmail runs without a smarthost."""

from __future__ import annotations

import asyncio
import mailbox
import threading
from pathlib import Path

import pytest

from maskmail.core.errors import DeliveryDeferred
from maskmail.mail.outbound import Outbox

SENDERS = 6


@pytest.mark.slow
def test_first_deliveries_at_once_to_a_new_outbox_all_land(tmp_path: Path) -> None:
    """Several workers (or notices sent after a response) may write the first messages of
    a new outbox at once; each must land, none may fail on the half-made Maildir."""
    for round_ in range(40):
        path = tmp_path / f"data{round_}" / "outbox"
        outbox = Outbox(path)
        start = threading.Barrier(SENDERS)
        failed: list[BaseException] = []

        def send(
            n: int,
            outbox: Outbox = outbox,
            start: threading.Barrier = start,
            failed: list[BaseException] = failed,
        ) -> None:
            message = f"Subject: {n}\r\n\r\nbody\r\n".encode()
            loop = asyncio.new_event_loop()
            # The loop's worker thread started before the barrier, so all write at once.
            loop.run_until_complete(asyncio.to_thread(lambda: None))
            start.wait()
            try:
                loop.run_until_complete(
                    outbox.deliver(message, sender="a@example.com", recipient="b@x.com")
                )
            except BaseException as exc:
                failed.append(exc)
            finally:
                loop.close()

        threads = [threading.Thread(target=send, args=(n,)) for n in range(SENDERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failed == []
        kept = mailbox.Maildir(path, create=False)
        assert sorted(str(m["Subject"]) for m in kept) == [str(n) for n in range(SENDERS)]


@pytest.mark.anyio
async def test_an_outbox_that_cannot_be_made_defers(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    outbox = Outbox(blocker / "outbox")
    with pytest.raises(DeliveryDeferred):
        await outbox.deliver(b"Subject: x\r\n\r\n", sender="a@example.com", recipient="b@x.com")
