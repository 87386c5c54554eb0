"""Gateway settings, read from the environment.

Validation happens up front so a misconfigured sandbox refuses to start with a message
naming the offending variable, instead of failing later on the first request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from sandboxes import environment
from sandboxes.bearer import control_token
from sandboxes.environment import SettingsError

__all__ = ["Settings", "SettingsError"]

DEFAULT_PORT = 18081
DEFAULT_HOST = "127.0.0.1"  # loopback unless told otherwise, e.g. 0.0.0.0 in a container


@dataclass(frozen=True)
class Settings:
    port: int
    public_url: str
    api_key: str
    control_token: str  # the bearer token of the /_sandbox controls
    webhook_secrets: tuple[str, ...]
    notify_url: str  # empty: notifications are not sent until one is configured
    host: str = DEFAULT_HOST
    # Where payments, refunds and deliveries are kept across restarts; None: in memory only.
    state_dir: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        port = _port(env.get("CARD_GATEWAY_PORT", "").strip())
        public_url = env.get("CARD_GATEWAY_PUBLIC_URL", "").strip() or f"http://127.0.0.1:{port}"
        return cls(
            port=port,
            public_url=_http_url("CARD_GATEWAY_PUBLIC_URL", public_url).rstrip("/"),
            api_key=_api_key(env.get("CARD_GATEWAY_API_KEY", "").strip()),
            control_token=control_token(env, "CARD_GATEWAY_CONTROL_TOKEN"),
            webhook_secrets=_secrets(env.get("CARD_GATEWAY_WEBHOOK_SECRETS", "")),
            notify_url=_notify_url(env.get("CARD_GATEWAY_NOTIFY_URL", "").strip()),
            host=env.get("CARD_GATEWAY_HOST", "").strip() or DEFAULT_HOST,
            state_dir=environment.folder(env, "CARD_GATEWAY_STATE_DIR"),
        )


def _port(raw: str) -> int:
    if not raw:
        return DEFAULT_PORT
    if not raw.isdigit() or not 1 <= int(raw) <= 65535:
        raise SettingsError(f"CARD_GATEWAY_PORT must be a port number 1-65535, got {raw!r}")
    return int(raw)


def _api_key(raw: str) -> str:
    if not raw:
        raise SettingsError("CARD_GATEWAY_API_KEY is required (the bearer token clients present)")
    return raw


def _secrets(raw: str) -> tuple[str, ...]:
    secrets = tuple(part.strip() for part in raw.split(",") if part.strip())
    if not secrets:
        raise SettingsError(
            "CARD_GATEWAY_WEBHOOK_SECRETS is required"
            " (comma-separated secrets the notifications are signed with)"
        )
    return secrets


def _notify_url(raw: str) -> str:
    return _http_url("CARD_GATEWAY_NOTIFY_URL", raw) if raw else ""


def _http_url(name: str, raw: str) -> str:
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SettingsError(f"{name} must be an http(s) URL, got {raw!r}")
    return raw
