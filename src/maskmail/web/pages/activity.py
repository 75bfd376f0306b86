"""The account's activity: the last 30 days of all its addresses."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from maskmail.http_shared.connection import Conn
from maskmail.store import activity
from maskmail.web import chart
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import require_viewer
from maskmail.web.render import page

router = APIRouter(include_in_schema=False, route_class=PageRoute)


@router.get("/activity")
async def show_activity(request: Request, conn: Conn) -> Response:
    viewer = await require_viewer(request, conn)
    days = await activity.last_days(conn, viewer.user_id)
    return page(
        request,
        "activity.html",
        viewer,
        chart=chart.svg(days, "Activity of all your addresses"),
        totals=chart.totals(days),
        days=days,
    )
