"""`python -m services.notify`: settings, logging, tracing, bootstrap, serve until SIGTERM."""

from __future__ import annotations

from servicekit.runtime import service_main
from services.notify.bootstrap import bootstrap
from services.notify.settings import Settings


async def _serve(settings: Settings) -> None:
    await bootstrap(settings).serve_until_stopped()


main = service_main("notify", Settings.from_env, _serve)
