"""Every setting maskmail reads, in one typed object, read once at start-up."""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from maskmail.core.envelope import normal_domain

CONFIG_FILE_ENV = "MASKMAIL_CONFIG_FILE"
DATABASE_SCHEMES = frozenset(
    {"sqlite", "sqlite+aiosqlite", "postgresql", "postgres", "postgresql+asyncpg"}
)
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
    max_mailboxes_per_user: int = Field(default=10, ge=1)
    # Verification messages (docs/api.md) one user may have sent in any 24 hours: to one
    # address, and to all addresses together; past either, adding a mailbox is a 429.
    # 0: no limit.
    mailbox_verify_per_address: int = Field(default=3, ge=0)
    mailbox_verify_per_user: int = Field(default=20, ge=0)
    # Addresses one owner's catch-all may make on first mail (docs/mail.md): per hour,
    # and kept at once; past either, mail to a new name is deferred. 0: no limit.
    first_mail_per_hour: int = Field(default=100, ge=0)
    first_mail_max: int = Field(default=10_000, ge=0)
    # Subdomain names (claims and renames) one user may take a day; 0: no limit.
    subdomain_names_per_day: int = Field(default=10, ge=0)
    # Custom domains (docs/api.md) one user may add; 0: none.
    max_domains_per_user: int = Field(default=5, ge=0)
    # The DNS server custom domains are checked against (host:port); unset: the system's.
    dns_resolver: str = ""
    max_page_size: int = Field(default=100, ge=1)
    rate_limit: str = "600/minute"
    # Failed dashboard sign-ins allowed per account and per client.
    signin_rate_limit: str = "10/minute"
    redis_url: str = ""
    address_length: int = Field(default=8, ge=6, le=64)
    # Reverse proxies whose X-Forwarded-* headers are believed: IPs or networks,
    # comma-separated, or "*" for any peer (http_shared/forwarded.py).
    trusted_proxies: str = "127.0.0.1,::1"
    db_pool_size: int = Field(default=10, ge=1)
    # Seconds a PostgreSQL connection attempt or statement may take before the API
    # answers 503 and the mail plane 451.
    db_timeout: float = Field(default=5, gt=0)
    # The API's bodies are a few hundred bytes; anything near this is abuse.
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    # The mail plane.
    # Hosts whose spam-verdict headers are believed: IPs or networks, comma-separated.
    trusted_relays: str = "127.0.0.0/8,::1"
    max_message_size: int = Field(default=25 * 1024 * 1024, ge=1024)
    smtp_max_connections: int = Field(default=100, ge=1)
    # Processes of `maskmail smtp` on its one port; 0: one per core this process may use.
    smtp_workers: int = Field(default=0, ge=0)
    # Port of the Postfix policy service (docs/postfix.md) on the SMTP host; 0: off.
    policy_port: int = Field(default=0, ge=0, le=65535)
    # Connections one client address may hold at once; Postfix's own default for its
    # clients (smtpd_client_connection_count_limit), above its 20 deliveries in parallel.
    smtp_max_per_client: int = Field(default=50, ge=1)
    # Seconds a client may stay silent before the server hangs up.
    smtp_timeout: float = Field(default=300, gt=0)
    # Seconds to wait on the smarthost (connect and each command) before answering 451.
    outbound_timeout: float = Field(default=60, gt=0)
    # Seconds checking an OpenPGP key or encrypting a forward may take before the API
    # answers 503 and the mail plane 451 (both take milliseconds).
    pgp_timeout: float = Field(default=30, gt=0)
    # The name in the banner, the Received header and EHLO; defaults to the relay domain.
    smtp_hostname: str = ""
    # HMAC key for bounce addresses; unset: generated once and kept in the data dir.
    bounce_secret: str = ""
    # Hard bounces within 24 hours that pause forwarding for a relay address; 0: never.
    bounce_pause_threshold: int = Field(default=5, ge=0)
    # Days of per-address daily counts kept (the dashboard shows 30); older are deleted.
    activity_days: int = Field(default=90, ge=30, le=36500)
    rspamd_url: str = ""
    # Hosts (authserv-ids) whose Authentication-Results decide whether a reply really
    # comes from the owner's domain, comma-separated; unset: the newest header, which
    # the trusted relay in front of maskmail added.
    authserv_ids: str = ""
    # DKIM signing of forwards; the key file defaults to <data dir>/dkim.key when it exists.
    dkim_selector: str = "maskmail"
    dkim_key_file: str = ""
    # Browser origins allowed to call the API (comma-separated, or "*"). Keys travel in
    # headers, never cookies, so "*" lets no page act with someone else's rights.
    cors_origins: str = "*"
    # Path prefix the API is served under when the proxy does not send X-Forwarded-Prefix.
    root_path: str = ""
    # Lines on stderr: "text" for people, "json" (one object a line) for collectors.
    log_format: Literal["text", "json"] = "text"
    log_level: Literal["debug", "info", "warning", "error", "critical"] = "info"
    # Clients (IPs or networks, comma-separated) that may read GET /metrics.
    metrics_allow: str = "127.0.0.0/8,::1"
    # Who may make an account (docs/operations.md, "Sign-up"): nobody but the operator
    # ("closed"), people with an invitation ("invite"), or anyone ("open"). New accounts
    # get the limits above (MASKMAIL_MAX_*_PER_USER) until an admin sets their own.
    signup: Literal["closed", "invite", "open"] = "closed"
    # Sign-up attempts per client and per address, in the limits library's notation.
    signup_rate_limit: str = "5/hour"
    # Where the dashboard is served (scheme, host, any path prefix), for the links the
    # command line prints (`maskmail invite create`); unset: https:// and the domain.
    public_url: str = ""
    # Password reset by mail (docs/dashboard.md): requests allowed per client and per
    # email asked for, each.
    password_reset_rate_limit: str = "5/hour"  # noqa: S105 (a rate, not a password)
    # Mail a user on a sign-in from a browser they have not signed in from before; the
    # browsers each user has, the least recently seen forgotten first.
    signin_notice: bool = True
    known_devices_per_user: int = Field(default=20, ge=1, le=1000)
    # Two-factor sign-in (docs/dashboard.md). The WebAuthn relying party id: the host name
    # the dashboard is opened at (never an IP address, which browsers refuse); unset: the
    # request's host, through a trusted proxy's X-Forwarded-Host.
    webauthn_rp_id: str = ""
    # Wrong second steps (codes, keys) allowed per account and per client.
    two_factor_rate_limit: str = "20/hour"

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

    @field_validator("log_format", "log_level", "signup", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("domain")
    @classmethod
    def _lower_domain(cls, value: str) -> str:
        value = normal_domain(value)
        if not value or any(c.isspace() or c in "@/\\" for c in value):
            raise ValueError("must be a bare domain name such as relay.example.com")
        return value

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: str) -> str:
        value = value.strip()
        scheme = value.partition("://")[0].lower()
        if value and scheme not in DATABASE_SCHEMES:
            raise ValueError(
                f"unsupported database {scheme!r}; use sqlite:///PATH or "
                "postgresql://USER@HOST/DATABASE"
            )
        return value

    @field_validator("smarthost", "dns_resolver")
    @classmethod
    def _check_smarthost(cls, value: str) -> str:
        value = value.strip()
        if value:
            split_host_port(value)
        return value

    @field_validator("trusted_relays", "metrics_allow")
    @classmethod
    def _check_relays(cls, value: str) -> str:
        _networks(value)
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _check_proxies(cls, value: str) -> str:
        _networks(",".join(part for part in value.split(",") if part.strip() != "*"))
        return value

    @field_validator("root_path")
    @classmethod
    def _check_root_path(cls, value: str) -> str:
        prefix = clean_prefix(value)
        if prefix is None:
            raise ValueError("must be a URL path such as /maskmail")
        return prefix

    @field_validator("signup_rate_limit", "password_reset_rate_limit", "two_factor_rate_limit")
    @classmethod
    def _check_rate(cls, value: str) -> str:
        from limits import parse  # here: the commands that never serve load no limits

        try:
            parse(value)
        except ValueError as exc:
            raise ValueError("must be a rate such as 5/hour") from exc
        return value

    @field_validator("public_url")
    @classmethod
    def _check_public_url(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        scheme, sep, rest = value.partition("://")
        if value and (not sep or scheme not in {"http", "https"} or not rest):
            raise ValueError("must be a URL such as https://relay.example.com")
        return value

    @property
    def dashboard_url(self) -> str:
        """Where the dashboard is served, for links made outside a request."""
        return self.public_url or f"https://{self.domain}"

    @field_validator("webauthn_rp_id")
    @classmethod
    def _check_rp_id(cls, value: str) -> str:
        value = normal_domain(value)
        if value and (not re.fullmatch(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?", value) or _is_ip(value)):
            raise ValueError("must be a host name such as relay.example.com, not an IP address")
        return value

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
    def smarthost_address(self) -> tuple[str, int] | None:
        """``(host, port)`` of the outbound server, or None to deliver to the outbox."""
        return split_host_port(self.smarthost) if self.smarthost else None

    @property
    def dns_resolver_address(self) -> tuple[str, int] | None:
        """``(host, port)`` of the DNS server for custom domain checks, or None."""
        return split_host_port(self.dns_resolver) if self.dns_resolver else None

    @property
    def outbox_dir(self) -> Path:
        """The Maildir that receives forwards when no smarthost is set."""
        return self.data_dir / "outbox"

    @property
    def trusted_relay_networks(self) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
        return _networks(self.trusted_relays)

    @property
    def metrics_allow_networks(
        self,
    ) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
        return _networks(self.metrics_allow)

    @property
    def dkim_key_path(self) -> Path:
        """Where the DKIM private key is read from (and ``maskmail dkim generate`` writes)."""
        return Path(self.dkim_key_file) if self.dkim_key_file else self.data_dir / "dkim.key"

    @property
    def authserv_id_list(self) -> tuple[str, ...]:
        return tuple(i.strip().lower() for i in self.authserv_ids.split(",") if i.strip())

    @property
    def mail_hostname(self) -> str:
        return self.smtp_hostname or self.domain


def split_host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdecimal() or not 0 < int(port) < 65536:
        raise ValueError("must be host:port, such as 127.0.0.1:25 or [::1]:25")
    return host, int(port)


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _networks(value: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    try:
        return tuple(
            ipaddress.ip_network(part.strip(), strict=False)
            for part in value.split(",")
            if part.strip()
        )
    except ValueError as exc:
        raise ValueError(f"must be comma-separated IPs or networks: {exc}") from exc


BOUNCE_SECRET_FILE = "bounce-secret"  # noqa: S105 (a file name)


def load_bounce_secret(settings: Settings) -> bytes:
    """The key that signs bounce addresses.

    Taken from ``MASKMAIL_BOUNCE_SECRET`` when set; otherwise generated once and kept in
    the data dir, so that bounces for mail sent before a restart still verify.
    """
    if settings.bounce_secret:
        return settings.bounce_secret.encode("utf-8")
    path = settings.data_dir / BOUNCE_SECRET_FILE
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        # Write aside, then link into place: link fails if another process won the race,
        # and nobody ever reads a half-written key.
        tmp = path.with_name(f".{BOUNCE_SECRET_FILE}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    secret = path.read_text().strip()
    if not secret:
        raise ValueError(f"the bounce secret file {path} is empty; delete it to make a new one")
    return secret.encode("utf-8")


def load_settings() -> Settings:
    return Settings()
