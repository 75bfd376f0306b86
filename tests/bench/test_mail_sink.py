"""bench/mail_sink.py's recorder: one arrival per Message-ID, and a second one counted."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace

from bench.mail_sink import Recorder


def test_a_message_arriving_twice_is_counted_once_and_as_a_duplicate(tmp_path: Path) -> None:
    async def deliver() -> Recorder:
        recorder = Recorder()
        for rcpt, message_id in (("a@x", "m1"), ("b@x", "m2"), ("c@x", "m1")):
            content = f"Message-ID: <{message_id}>\r\n\r\nbody\r\n".encode()
            envelope = SimpleNamespace(original_content=content, rcpt_tos=[rcpt])
            assert await recorder.handle_DATA(None, None, envelope) == "250 2.0.0 ok"
        return recorder

    recorder = asyncio.run(deliver())
    out = tmp_path / "arrivals.json"
    recorder.dump(out)
    found = json.loads(out.read_text())
    assert sorted(found["arrivals"]) == ["m1", "m2"]
    assert found["arrivals"]["m1"][1] == "a@x"  # the first arrival is kept
    assert found["duplicates"] == 1
    recorder.dump(out)  # forgotten after a dump
    assert json.loads(out.read_text())["duplicates"] == 0
