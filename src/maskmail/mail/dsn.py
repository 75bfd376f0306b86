"""The mail plane's side of bounces (DSNs): reading one, with flufl.bounce's detectors
first, then RFC 3464's own fields. What it means is the bounce rules' (``core/dsn.py``)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from email import message_from_bytes
from email.message import Message

from flufl.bounce import all_failures

from maskmail.core import dsn

log = logging.getLogger(__name__)


def read_bounce(raw: bytes) -> dsn.Bounce:
    """Hard or soft, and the status code, of a bounce as it arrived.

    The compat32 parser is the one flufl.bounce is written against: it splits each
    ``message/delivery-status`` part into its header blocks.
    """
    message = message_from_bytes(raw)
    try:
        temporary, permanent = all_failures(message)
    except Exception:  # a heuristic detector tripping over odd mail must not lose the bounce
        log.warning("the bounce detectors failed on a message; reading its fields alone")
        temporary, permanent = frozenset(), frozenset()
    return dsn.classify(
        permanent=bool(permanent), temporary=bool(temporary), reports=list(reports(message))
    )


def reports(message: Message) -> Iterator[dsn.Report]:
    """The per-recipient blocks of every ``message/delivery-status`` part."""
    for part in message.walk():
        if part.get_content_type() != "message/delivery-status":
            continue
        blocks = part.get_payload()
        if not isinstance(blocks, list):
            continue
        for block in blocks:
            if not isinstance(block, Message):
                continue
            action = str(block.get("action", "")).strip().lower()
            status = dsn.status_code(str(block.get("status", "")))
            if action or status:
                yield dsn.Report(action=action, status=status or "")
