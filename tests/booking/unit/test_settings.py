"""Settings come from the environment; a missing or bad one is named."""

from __future__ import annotations

import pytest

from servicekit.config import SettingError
from services.booking.settings import Settings

GOOD = {
    "BOOKING_DATABASE_URL": "postgresql+psycopg://u:p@127.0.0.1:1/booking",
    "KAFKA_BOOTSTRAP": "127.0.0.1:1",
    "BOOKING_IDEMPOTENCY_SECRET": "0123456789abcdef0123",
}


def test_defaults_apply_when_optional_settings_are_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in GOOD.items():
        monkeypatch.setenv(name, value)
    settings = Settings.from_env()
    assert settings.hold_seconds == 900 and settings.terms_version == "2026-11"
    assert settings.grpc_address == "127.0.0.1:50051" and settings.topic("x") == "x"


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
