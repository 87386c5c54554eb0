"""``python -m sandboxes.mail``: read settings from the environment and serve SMTP and HTTP."""

from __future__ import annotations

import sys

from sandboxes.serving import serve

from .app import create_app
from .settings import Settings


def main() -> int:
    return serve("mail sandbox", Settings.from_env, create_app, lambda s: (s.host, s.http_port))


if __name__ == "__main__":
    sys.exit(main())
