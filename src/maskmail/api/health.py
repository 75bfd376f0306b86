"""/healthz and /readyz: for load balancers, orchestrators and monitoring."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request
from starlette.responses import JSONResponse, Response

from maskmail.api import metrics
from maskmail.api.head import HeadAsGet
from maskmail.config import Settings
from maskmail.readiness import Readiness

router = APIRouter(tags=["operations"])


@router.get("/healthz", summary="The process serves", include_in_schema=False)
async def healthz() -> Response:
    return JSONResponse({"status": "ok"})


@router.get("/readyz", summary="The process can do its work", include_in_schema=False)
async def readyz(request: Request) -> Response:
    """200 when every check passes; 503 naming each one that does not."""
    readiness: Readiness = request.app.state.readiness
    problems = await readiness.problems()
    if problems:
        return JSONResponse(
            {"status": "unavailable", "missing": sorted(problems), "problems": problems},
            status_code=503,
        )
    return JSONResponse({"status": "ready"})


def health_app(readiness: Readiness, settings: Settings) -> FastAPI:
    """The probes and the metrics alone, for ``maskmail smtp --health-port``."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.state.readiness = readiness
    app.state.settings = settings
    app.include_router(router)
    app.include_router(metrics.router)
    app.add_middleware(HeadAsGet)
    return app
