"""`python -m services.access`: settings, logging, tracing, bootstrap, serve until SIGTERM."""

from __future__ import annotations

from servicekit.runtime import service_main
from services.access.bootstrap import bootstrap
from services.access.settings import Settings


async def _serve(settings: Settings) -> None:
    await bootstrap(settings).serve_until_stopped()


main = service_main("access", Settings.from_env, _serve)
