"""Settings: TOML file and environment, smarthost, trusted relays, the kept bounce secret."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from pydantic import ValidationError

from maskmail.config import BOUNCE_SECRET_FILE, Settings, load_bounce_secret


def test_smarthost_parses_host_and_port() -> None:
    assert Settings(smarthost="127.0.0.1:2526").smarthost_address == ("127.0.0.1", 2526)
    assert Settings(smarthost="[::1]:25").smarthost_address == ("::1", 25)
    assert Settings().smarthost_address is None


@pytest.mark.parametrize("bad", ["localhost", "host:", ":25", "host:0", "host:99999", "h:x"])
def test_bad_smarthost_is_refused(bad: str) -> None:
    with pytest.raises(ValidationError):
        Settings(smarthost=bad)


def test_outbox_is_in_the_data_dir(tmp_path: Path) -> None:
    assert Settings(data_dir=tmp_path).outbox_dir == tmp_path / "outbox"


def test_trusted_relays_default_to_loopback() -> None:
    networks = Settings().trusted_relay_networks
    assert ipaddress.ip_address("127.0.0.1") in networks[0]
    assert ipaddress.ip_network("::1") in networks
    with pytest.raises(ValidationError):
        Settings(trusted_relays="127.0.0.1,nonsense")


def test_bounce_secret_is_generated_once_and_kept(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    first = load_bounce_secret(settings)
    assert len(first) == 64
    assert load_bounce_secret(Settings(data_dir=tmp_path / "data")) == first
    assert (tmp_path / "data" / BOUNCE_SECRET_FILE).stat().st_mode & 0o077 == 0
    assert load_bounce_secret(Settings(data_dir=tmp_path / "other")) != first
    assert [p.name for p in (tmp_path / "data").iterdir()] == [BOUNCE_SECRET_FILE]


def test_configured_bounce_secret_wins(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, bounce_secret="s3cret")
    assert load_bounce_secret(settings) == b"s3cret"
    assert not (tmp_path / BOUNCE_SECRET_FILE).exists()


def test_toml_file_sets_values_and_environment_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "maskmail.toml"
    config.write_text('domain = "Mask.Example.org"\nmax_page_size = 25\nrate_limit = "5/second"\n')
    monkeypatch.setenv("MASKMAIL_CONFIG_FILE", str(config))
    monkeypatch.setenv("MASKMAIL_RATE_LIMIT", "7/second")
    settings = Settings()
    assert (settings.domain, settings.max_page_size) == ("mask.example.org", 25)
    assert settings.rate_limit == "7/second"


def test_the_webauthn_rp_id_is_a_host_name() -> None:
    assert Settings(webauthn_rp_id=" Relay.Example.COM. ").webauthn_rp_id == "relay.example.com"
    assert Settings().webauthn_rp_id == ""
    for bad in ("10.0.0.1", "::1", "relay.example.com:8443", "https://relay.example.com"):
        with pytest.raises(ValidationError):
            Settings(webauthn_rp_id=bad)


def test_activity_days_keep_at_least_what_the_dashboard_shows() -> None:
    assert Settings().activity_days == 90
    assert Settings(activity_days=30).activity_days == 30
    for bad in (29, 0, -1, 36501):
        with pytest.raises(ValidationError):
            Settings(activity_days=bad)
