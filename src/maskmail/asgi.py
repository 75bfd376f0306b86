"""The ASGI entry point uvicorn workers import: settings come from the environment."""

from __future__ import annotations

import gc

from fastapi import FastAPI

from maskmail import logs
from maskmail.app import create_app
from maskmail.config import load_settings
from maskmail.mail.plane import notices_for


def app_from_env() -> FastAPI:
    """Also the start of each of ``serve --workers N``'s processes: logging is set up here."""
    settings = load_settings()
    logs.configure(level=settings.log_level, fmt=settings.log_format, relay_domain=settings.domain)
    # Everything the lifespan made lives as long as the worker: keep the collector from
    # walking it again on every full collection.
    return create_app(settings, on_started=gc.freeze, outbound=notices_for(settings))
