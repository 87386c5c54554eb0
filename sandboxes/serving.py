"""Running a sandbox process: its settings from the environment, then its app on uvicorn."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import uvicorn

from sandboxes.environment import SettingsError

S = TypeVar("S")
# A response held back by a timeout or slow fault would otherwise keep shutdown waiting for
# it; a sandbox has nothing worth a long graceful shutdown.
SHUTDOWN_GRACE_S = 2


def serve(
    name: str,
    read_settings: Callable[[Mapping[str, str]], S],
    create_app: Callable[[S], Any],
    address: Callable[[S], tuple[str, int]],
) -> int:
    """Serves until stopped; a bad setting ends the process with 2, naming it."""
    try:
        settings = read_settings(os.environ)
    except SettingsError as exc:
        print(f"{name}: refusing to start: {exc}", file=sys.stderr)
        return 2
    host, port = address(settings)
    uvicorn.run(
        create_app(settings), host=host, port=port, timeout_graceful_shutdown=SHUTDOWN_GRACE_S
    )
    return 0
