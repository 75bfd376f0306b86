"""The mail tests' database with the relay's schema, for workflows that send mail."""

from tests.mail.conftest import relay_engine

__all__ = ["relay_engine"]
