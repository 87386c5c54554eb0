"""Lock provider settings, read from the environment and checked before serving."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sandboxes import environment
from sandboxes.bearer import control_token
from sandboxes.environment import SettingsError

from .schemas import DEVICE_ID_PATTERN

DEFAULT_PORT = 18082


@dataclass(frozen=True)
class Settings:
    port: int
    api_key: str
    control_token: str  # the bearer token of the /_sandbox controls
    devices: tuple[str, ...]  # the devices that exist at start
    host: str = environment.DEFAULT_HOST
    # Where devices, codes and the door log are kept across restarts; None: in memory only.
    state_dir: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        return cls(
            port=environment.port(env, "LOCK_PROVIDER_PORT", DEFAULT_PORT),
            api_key=environment.required(
                env, "LOCK_PROVIDER_API_KEY", "the bearer token clients present"
            ),
            control_token=control_token(env, "LOCK_PROVIDER_CONTROL_TOKEN"),
            devices=_devices(env.get("LOCK_PROVIDER_DEVICES", "")),
            host=environment.host(env, "LOCK_PROVIDER_HOST"),
            state_dir=environment.folder(env, "LOCK_PROVIDER_STATE_DIR"),
        )


def _devices(raw: str) -> tuple[str, ...]:
    devices = tuple(part.strip() for part in raw.split(",") if part.strip())
    if not devices:
        raise SettingsError(
            "LOCK_PROVIDER_DEVICES is required (comma-separated ids of the devices that exist)"
        )
    for device in devices:
        if not re.fullmatch(DEVICE_ID_PATTERN, device):
            raise SettingsError(
                f"LOCK_PROVIDER_DEVICES: {device!r} is not a device id"
                " (1-128 of A-Z a-z 0-9 _ . : -, starting with a letter or digit)"
            )
    return devices
