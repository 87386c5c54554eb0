"""The FastAPI application, which also runs the SMTP server on its event loop."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from sandboxes import health
from sandboxes.records import Records
from sandboxes.refusals import install_refusals

from . import control, lookup, messages
from .runtime import MailSandbox
from .settings import Settings
from .smtp import start_smtp_server
from .state import MailState

MAX_BODY = 16 * 1024  # only fault settings are ever posted


def create_app(settings: Settings) -> FastAPI:
    state = MailState(records=Records(settings.state_dir))
    state.restore()
    sandbox = MailSandbox(settings, state)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # Bound before the HTTP API answers, so a ready API means a ready SMTP server.
        server = await start_smtp_server(sandbox.state, settings.host, settings.smtp_port)
        try:
            yield
        finally:
            server.close()

    app = FastAPI(title="Mail sandbox", lifespan=lifespan, max_body_size=MAX_BODY)
    app.state.sandbox = sandbox
    app.include_router(messages.router)
    app.include_router(control.router)
    app.include_router(lookup.router)
    app.include_router(health.router)
    install_refusals(app)
    return app
