"""Reading a sandbox's settings from the environment.

Each sandbox validates every setting before it serves, so a misconfigured one refuses to
start with a message naming the variable instead of failing on its first request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"  # loopback unless told otherwise, e.g. 0.0.0.0 in a container
_HOST = re.compile(r"[A-Za-z0-9.:-]{1,253}")


class SettingsError(ValueError):
    """A required setting is missing or invalid; the message names the variable."""


def port(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= 65535:
        raise SettingsError(f"{name} must be a port number 1-65535, got {raw!r}")
    return int(raw)


def host(env: Mapping[str, str], name: str) -> str:
    raw = env.get(name, "").strip()
    if not raw:
        return DEFAULT_HOST
    if not _HOST.fullmatch(raw):
        raise SettingsError(f"{name} must be a host name or an IP address, got {raw!r}")
    return raw


def required(env: Mapping[str, str], name: str, meaning: str) -> str:
    raw = env.get(name, "").strip()
    if not raw:
        raise SettingsError(f"{name} is required ({meaning})")
    return raw


def folder(env: Mapping[str, str], name: str) -> Path | None:
    """The folder setting ``name`` names; None when it is unset or empty."""
    raw = env.get(name, "").strip()
    return Path(raw) if raw else None
