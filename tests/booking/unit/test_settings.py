"""Settings come from the environment; a missing or bad one is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from servicekit import config
from servicekit.config import SettingError
from services.booking.settings import Settings
from tests.support import tls

GOOD = {
    "BOOKING_DATABASE_URL": "postgresql+psycopg://u:p@127.0.0.1:1/booking",
    "KAFKA_BOOTSTRAP": "127.0.0.1:1",
    "BOOKING_IDEMPOTENCY_SECRET": "0123456789abcdef0123",
    "BOOKING_TLS_DIR": tls.folder("booking"),
}


def test_defaults_apply_when_optional_settings_are_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in GOOD.items():
        monkeypatch.setenv(name, value)
    settings = Settings.from_env()
    assert settings.hold_seconds == 900 and settings.terms_version == "2026-11"
    assert settings.grpc_address == "127.0.0.1:15051" and settings.topic("x") == "x"


@pytest.mark.parametrize("missing", sorted(GOOD))
def test_a_missing_required_setting_is_named(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    for name, value in GOOD.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv(missing)
    with pytest.raises(SettingError) as refused:
        Settings.from_env()
    assert refused.value.name == missing


def test_an_invalid_hold_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in GOOD.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("BOOKING_HOLD_SECONDS", "soon")
    with pytest.raises(SettingError, match="BOOKING_HOLD_SECONDS"):
        Settings.from_env()


def test_a_certificate_folder_without_its_files_is_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name, value in GOOD.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "tls.crt").write_text("only the certificate")
    monkeypatch.setenv("BOOKING_TLS_DIR", str(tmp_path))
    with pytest.raises(SettingError, match=r"lacks tls\.key, ca\.crt") as refused:
        Settings.from_env()
    assert refused.value.name == "BOOKING_TLS_DIR"


def test_plaintext_is_only_for_a_measurement_that_names_it_exactly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in GOOD.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("BOOKING_TLS_DIR")
    monkeypatch.setenv(config.PLAINTEXT_SETTING, "yes")
    with pytest.raises(SettingError) as refused:
        Settings.from_env()
    assert refused.value.name == config.PLAINTEXT_SETTING
    monkeypatch.setenv(config.PLAINTEXT_SETTING, config.PLAINTEXT_VALUE)
    assert Settings.from_env().tls_dir == ""
