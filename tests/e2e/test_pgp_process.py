"""A real `maskmail up` that checks a PGP key and encrypts a forward leaves no process
behind when it stops (issue 21 item 14: gpg-agent daemons outlived it)."""

from __future__ import annotations

import os
import secrets
import signal
import time
from email import message_from_bytes, policy
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import Deployment
from tests.e2e.test_mail_process import OWNER, note, send, with_smarthost
from tests.pgp_keys import keys
from tests.sink import HOST, Sink
from tests.support import free_port, running, wait_for_port

pytestmark = pytest.mark.slow


def _marked(mark: bytes) -> list[int]:
    """Every process whose environment holds ``mark``: maskmail's, and anything it
    started, daemons that left its process tree and session included."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if mark in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def test_no_process_outlives_maskmail(deployment: Deployment, sink: Sink) -> None:
    api_key = deployment.user_with_key(OWNER)
    mark = f"MASKMAIL_TEST_MARK={secrets.token_hex(8)}"
    env = {**with_smarthost(deployment, sink), mark.split("=")[0]: mark.split("=")[1]}
    api_port, smtp_port = free_port(), free_port()
    args = ("up", "--api-port", str(api_port), "--smtp-port", str(smtp_port))
    with running(env, *args, port=api_port, log=deployment.tmp / "up.log"):
        wait_for_port(smtp_port)
        headers = {"Authorization": f"Bearer {api_key}"}
        with httpx.Client(base_url=f"http://{HOST}:{api_port}", headers=headers) as api:
            [mailbox] = api.get("/v3/relay/mailboxes").json()
            url = f"/v3/relay/mailboxes/{mailbox['id']}/pgp"
            refused = api.put(url, json={"public_key": keys().sign_only})
            assert refused.json()["details"]["reason"] == "cannot_encrypt"
            assert api.put(url, json={"public_key": keys().good}).status_code == 200
            address = api.post("/v3/relay/addresses").json()["full_address"]
            assert send(smtp_port, address, note(address)) == {}
        assert _marked(mark.encode()) != []  # the mark is seen: maskmail itself
    [got] = sink.messages
    forwarded = message_from_bytes(got.data, policy=policy.default)
    assert forwarded.get_content_type() == "multipart/encrypted"
    left: list[int] = []
    for _ in range(50):
        left = _marked(mark.encode())
        if not left:
            break
        time.sleep(0.1)
    for pid in left:  # not to leak them into the next tests
        os.kill(pid, signal.SIGKILL)
    assert left == []
