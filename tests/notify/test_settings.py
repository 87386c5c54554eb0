"""Notify's provider-lookup settings: empty by default (plain SMTP), a URL when set, and a
bad one named."""

from __future__ import annotations

import pytest

from servicekit.config import SettingError
from services.notify.settings import Settings
from tests.support import tls

GOOD = {
    "NOTIFY_DATABASE_URL": "postgresql+psycopg://u:p@127.0.0.1:1/notify",
    "KAFKA_BOOTSTRAP": "127.0.0.1:1",
    "NOTIFY_IDEMPOTENCY_SECRET": "0123456789abcdef0123",
    "NOTIFY_TLS_DIR": tls.folder("notify"),
    "MAIL_SMTP_HOST": "127.0.0.1",
    "MAIL_SMTP_PORT": "10025",
    "NOTIFY_MAIL_FROM": "noreply@liftfit.test",
    "NOTIFY_ACCESS_ADDRESS": "127.0.0.1:15053",
}


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("MAIL_LOOKUP_URL", "MAIL_LOOKUP_TIMEOUT_MS", "NOTIFY_LOOKUP_MAX_TRIES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in GOOD.items():
        monkeypatch.setenv(name, value)
    return monkeypatch


def test_without_a_lookup_url_there_is_no_lookup(environment: pytest.MonkeyPatch) -> None:
    settings = Settings.from_env()
    assert settings.mail_lookup_url == ""
    assert (settings.mail_lookup_timeout_s, settings.lookup_max_tries) == (5.0, 20)


def test_a_lookup_is_read(environment: pytest.MonkeyPatch) -> None:
    environment.setenv("MAIL_LOOKUP_URL", "http://127.0.0.1:18083/v1/lookup")
    environment.setenv("MAIL_LOOKUP_TIMEOUT_MS", "1500")
    environment.setenv("NOTIFY_LOOKUP_MAX_TRIES", "3")
    settings = Settings.from_env()
    assert settings.mail_lookup_url == "http://127.0.0.1:18083/v1/lookup"
    assert (settings.mail_lookup_timeout_s, settings.lookup_max_tries) == (1.5, 3)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MAIL_LOOKUP_URL", "127.0.0.1:18083/v1/lookup"),
        ("MAIL_LOOKUP_URL", "ftp://mail.example/lookup"),
        ("MAIL_LOOKUP_TIMEOUT_MS", "soon"),
        ("MAIL_LOOKUP_TIMEOUT_MS", "10"),
        ("NOTIFY_LOOKUP_MAX_TRIES", "0"),
    ],
)
def test_a_bad_lookup_setting_is_named(
    environment: pytest.MonkeyPatch, name: str, value: str
) -> None:
    environment.setenv(name, value)
    with pytest.raises(SettingError) as refused:
        Settings.from_env()
    assert refused.value.name == name
