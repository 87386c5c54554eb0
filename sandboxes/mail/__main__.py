"""``python -m sandboxes.mail``: read settings from the environment and serve SMTP and HTTP."""

from __future__ import annotations

import os
import sys

import uvicorn

from sandboxes.environment import SettingsError

from .app import create_app
from .settings import Settings

# A session held by the slow fault would otherwise keep shutdown waiting.
SHUTDOWN_GRACE_S = 2


def main() -> int:
    try:
        settings = Settings.from_env(os.environ)
    except SettingsError as exc:
        print(f"mail sandbox: refusing to start: {exc}", file=sys.stderr)
        return 2
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.http_port,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
