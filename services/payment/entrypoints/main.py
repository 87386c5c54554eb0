"""`python -m services.payment`: settings, logging, tracing, bootstrap, serve until SIGTERM."""

from __future__ import annotations

from servicekit.runtime import service_main
from services.payment.bootstrap import bootstrap
from services.payment.settings import Settings


async def serve(settings: Settings) -> None:
    app = bootstrap(settings)
    await app.serve_until_stopped()


main = service_main("payment", Settings.from_env, serve)
