"""Every setting maskmail reads, in one typed object, read once at start-up."""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

CONFIG_FILE_ENV = "MASKMAIL_CONFIG_FILE"
_PREFIX = re.compile(r"^(/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)*$")


def clean_prefix(value: str) -> str | None:
    """A path prefix without repeated or trailing slashes ("" for none); None if unsafe."""
    value = value.strip()
    if not value:
        return ""
    if not value.startswith("/"):
        return None
    prefix = "/" + "/".join(part for part in value.split("/") if part)
    prefix = "" if prefix == "/" else prefix
    return prefix if _PREFIX.match(prefix) else None


class Settings(BaseSettings):
    """Environment variables win over the optional TOML file (``MASKMAIL_CONFIG_FILE``)."""

    model_config = SettingsConfigDict(env_prefix="MASKMAIL_", extra="ignore", frozen=True)

    data_dir: Path = Path("./var")
    database_url: str = ""
    domain: str = "relay.localhost"
    smarthost: str = ""
    max_addresses_per_user: int = Field(default=0, ge=0)
    max_page_size: int = Field(default=100, ge=1)
    rate_limit: str = "600/minute"
    redis_url: str = ""
    address_length: int = Field(default=8, ge=6, le=64)
    # Hosts whose X-Forwarded-* headers are believed (comma-separated IPs, or "*").
    trusted_proxies: str = "127.0.0.1,::1"
    db_pool_size: int = Field(default=10, ge=1)
    # The API's bodies are a few hundred bytes; anything near this is abuse.
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    # Browser origins allowed to call the API (comma-separated, or "*"). Keys travel in
    # headers, never cookies, so "*" lets no page act with someone else's rights.
    cors_origins: str = "*"
    # Path prefix the API is served under when the proxy does not send X-Forwarded-Prefix.
    root_path: str = ""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        toml_path = os.environ.get(CONFIG_FILE_ENV)
        if toml_path:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=Path(toml_path)))
        return tuple(sources)

    @field_validator("domain")
    @classmethod
    def _lower_domain(cls, value: str) -> str:
        value = value.strip().lower().rstrip(".")
        if not value or any(c.isspace() or c in "@/\\" for c in value):
            raise ValueError("must be a bare domain name such as relay.example.com")
        return value

    @field_validator("root_path")
    @classmethod
    def _check_root_path(cls, value: str) -> str:
        prefix = clean_prefix(value)
        if prefix is None:
            raise ValueError("must be a URL path such as /maskmail")
        return prefix

    @property
    def resolved_database_url(self) -> str:
        """The SQLAlchemy URL with an async driver, defaulting to SQLite in the data dir."""
        url = self.database_url or f"sqlite+aiosqlite:///{self.data_dir / 'maskmail.db'}"
        for plain, driver in (
            ("sqlite://", "sqlite+aiosqlite://"),
            ("postgresql://", "postgresql+asyncpg://"),
            ("postgres://", "postgresql+asyncpg://"),
        ):
            if url.startswith(plain):
                return driver + url[len(plain) :]
        return url

    @property
    def cors_origin_list(self) -> list[str]:
        return [o.strip().rstrip("/") for o in self.cors_origins.split(",") if o.strip()]

    @property
    def trusted_proxy_hosts(self) -> frozenset[str]:
        return frozenset(h.strip() for h in self.trusted_proxies.split(",") if h.strip())


def load_settings() -> Settings:
    return Settings()
