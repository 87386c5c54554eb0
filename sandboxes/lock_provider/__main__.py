"""``python -m sandboxes.lock_provider``: read settings from the environment and serve."""

from __future__ import annotations

import os
import sys

import uvicorn

from sandboxes.environment import SettingsError

from .app import create_app
from .settings import Settings

# A response held back by a timeout fault would otherwise keep shutdown waiting for
# hang_seconds; the sandbox has nothing worth a long graceful shutdown.
SHUTDOWN_GRACE_S = 2


def main() -> int:
    try:
        settings = Settings.from_env(os.environ)
    except SettingsError as exc:
        print(f"lock provider: refusing to start: {exc}", file=sys.stderr)
        return 2
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
