"""/v3/relay/addresses/{id}/bounces: what came back for an address's forwards."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from maskmail.api.deps import CurrentOwner, CurrentSettings
from maskmail.api.docs import errors_for
from maskmail.api.routes.shared import AddressId, json
from maskmail.api.schemas import Bounces
from maskmail.http_shared.connection import Conn
from maskmail.store import bounces as store
from maskmail.store.clock import now

router = APIRouter(prefix="/v3/relay/addresses", tags=["relay addresses"])


@router.get(
    "/{address_id:int}/bounces",
    response_model=Bounces,
    responses=errors_for(401, 404, 429, 503),
    summary="Read an address's bounces",
    description=(
        "Bounces of the address's forwards, and whether enough hard ones in 24 hours "
        "paused it. A paused address shows `enabled: false`; enabling it again lifts the "
        "pause, and the bounces before it stop counting."
    ),
)
async def read_bounces(
    address_id: AddressId, owner: CurrentOwner, conn: Conn, settings: CurrentSettings
) -> Response:
    report = await store.bounce_report(conn, owner.user_id, address_id, now=now())
    return json(
        {
            "paused": report.paused_time is not None,
            "paused_time": report.paused_time,
            "threshold": settings.bounce_pause_threshold,
            "hard_bounces_24h": report.hard_bounces,
            "bounces": [
                {
                    "received_time": row.received_time,
                    "kind": row.kind,
                    "status": row.status,
                    "forgiven": row.forgiven,
                }
                for row in report.latest
            ],
        }
    )
