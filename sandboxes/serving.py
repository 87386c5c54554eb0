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
    # No access line per request: a real provider's are not ours to read, and what a
    # sandbox did is in its records and its own log lines. uvicorn's line cost 0.11 ms of
    # CPU a request, a third of a door check's, on the machine the platform's saga shares.
    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        access_log=False,
    )
    return 0
