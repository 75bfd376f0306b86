"""The ASGI entry point uvicorn workers import: settings come from the environment."""

from __future__ import annotations

from fastapi import FastAPI

from maskmail.api.app import create_app
from maskmail.config import load_settings


def app_from_env() -> FastAPI:
    return create_app(load_settings())
