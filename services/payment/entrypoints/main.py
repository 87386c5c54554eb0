"""`python -m services.payment`: settings, logging, tracing, bootstrap, serve until SIGTERM."""

from __future__ import annotations

from servicekit import tracing
from servicekit.config import refuse_to_start_on_bad_settings
from servicekit.runtime import configure_logging, run_process
from services.payment.bootstrap import bootstrap
from services.payment.settings import Settings


async def serve(settings: Settings) -> None:
    app = bootstrap(settings)
    await app.serve_until_stopped()


@refuse_to_start_on_bad_settings
def main() -> None:
    settings = Settings.from_env()
    configure_logging()
    tracing.configure_tracing("payment")
    run_process(serve(settings))
