"""``python -m sandboxes.card_gateway``: read settings from the environment and serve."""

from __future__ import annotations

import sys

from sandboxes.serving import serve

from .app import create_app
from .settings import Settings


def main() -> int:
    return serve("card gateway", Settings.from_env, create_app, lambda s: (s.host, s.port))


if __name__ == "__main__":
    sys.exit(main())
