"""Mail sandbox settings, read from the environment and checked before serving."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sandboxes import environment
from sandboxes.bearer import control_token
from sandboxes.environment import SettingsError

DEFAULT_SMTP_PORT = 10025
DEFAULT_HTTP_PORT = 18083


@dataclass(frozen=True)
class Settings:
    smtp_port: int
    http_port: int
    control_token: str  # the bearer token of the /_sandbox controls
    host: str = environment.DEFAULT_HOST
    # Where the messages accepted are kept across restarts; None: in memory only.
    state_dir: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        smtp_port = environment.port(env, "MAIL_SANDBOX_SMTP_PORT", DEFAULT_SMTP_PORT)
        http_port = environment.port(env, "MAIL_SANDBOX_HTTP_PORT", DEFAULT_HTTP_PORT)
        if smtp_port == http_port:
            raise SettingsError(
                f"MAIL_SANDBOX_SMTP_PORT and MAIL_SANDBOX_HTTP_PORT are both {smtp_port}"
            )
        return cls(
            smtp_port,
            http_port,
            control_token(env, "MAIL_SANDBOX_CONTROL_TOKEN"),
            environment.host(env, "MAIL_SANDBOX_HOST"),
            environment.folder(env, "MAIL_SANDBOX_STATE_DIR"),
        )
