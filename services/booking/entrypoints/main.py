"""The booking service's process: settings, logging, tracing, then serve until SIGTERM."""

from __future__ import annotations

from servicekit.config import refuse_to_start_on_bad_settings
from servicekit.runtime import configure_logging, run_process
from servicekit.tracing import configure_tracing
from services.booking.bootstrap import bootstrap
from services.booking.settings import Settings


async def _serve(settings: Settings) -> None:
    app = bootstrap(settings)
    await app.runtime.serve_until_stopped()


@refuse_to_start_on_bad_settings
def main() -> None:
    settings = Settings.from_env()  # before anything else, so a bad setting stops us at once
    configure_logging()
    configure_tracing("booking")
    run_process(_serve(settings))
