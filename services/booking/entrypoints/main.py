"""The booking service's process: settings, logging, tracing, then serve until SIGTERM."""

from __future__ import annotations

from servicekit.runtime import service_main
from services.booking.bootstrap import bootstrap
from services.booking.settings import Settings


async def _serve(settings: Settings) -> None:
    await bootstrap(settings).serve_until_stopped()


main = service_main("booking", Settings.from_env, _serve)
