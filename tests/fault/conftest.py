"""Fault tests run real processes, with the e2e deployment fixture."""

from tests.e2e.conftest import deployment

__all__ = ["deployment"]
