"""The sink both systems relay to: an aiosmtpd server in its own process.

It accepts everything and records, per Message-ID, when the message arrived (the
system-wide monotonic clock, which the load process reads too) and to whom. It lives for
the whole run, so the systems' connections to it are never cut between measurements; the
bench drives it over stdin, one command a line:

    collect N TIMEOUT OUT   wait until N messages arrived (or TIMEOUT seconds passed),
                            write them to OUT as JSON with how many
                            arrived twice, forget them, print "done"

    python -m bench.mail_sink PORT
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from aiosmtpd.smtp import SMTP

HOST = "127.0.0.1"
MESSAGE_ID = re.compile(rb"^Message-ID:[ \t]*<([^>\r\n]+)>", re.I | re.M)
HEADER_SCAN = 8192


class Recorder:
    """aiosmtpd handler: one arrival record per message, nothing else."""

    def __init__(self) -> None:
        # message id -> [arrival time, envelope recipient]
        self.arrivals: dict[str, list[Any]] = {}
        self.unmatched = 0
        self.duplicates = 0  # a Message-ID that arrived before: a message delivered twice
        self.changed = asyncio.Event()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        now = time.monotonic()
        content: bytes = envelope.original_content or b""
        found = MESSAGE_ID.search(content, 0, HEADER_SCAN)
        if found is None:
            self.unmatched += 1
        else:
            rcpt = envelope.rcpt_tos[0] if envelope.rcpt_tos else ""
            message_id = found.group(1).decode("ascii", "replace")
            if message_id in self.arrivals:
                self.duplicates += 1
            else:
                self.arrivals[message_id] = [now, rcpt]
        self.changed.set()
        return "250 2.0.0 ok"

    async def wait_for(self, expected: int) -> None:
        while len(self.arrivals) + self.unmatched < expected:
            self.changed.clear()
            await self.changed.wait()

    def dump(self, out: Path) -> None:
        """Write what arrived since the last dump, and forget it."""
        found = {"arrivals": self.arrivals, "unmatched": self.unmatched}
        out.write_text(json.dumps({**found, "duplicates": self.duplicates}))
        self.arrivals, self.unmatched, self.duplicates = {}, 0, 0


async def serve(port: int) -> None:
    loop = asyncio.get_running_loop()
    recorder = Recorder()

    def factory() -> SMTP:
        return SMTP(recorder, hostname="sink.localhost", decode_data=False, loop=loop)

    server = await loop.create_server(factory, host=HOST, port=port)
    commands = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(commands), sys.stdin)
    print("ready", flush=True)
    while line := (await commands.readline()).decode().strip():
        _, expected, seconds, out = line.split(" ", 3)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(float(seconds)):
                await recorder.wait_for(int(expected))
        recorder.dump(Path(out))
        print("done", flush=True)
    server.close()


def main(argv: list[str]) -> None:
    asyncio.run(serve(int(argv[0])))


if __name__ == "__main__":
    main(sys.argv[1:])
