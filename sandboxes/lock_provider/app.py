"""The FastAPI application: routers, refusals and a bound on request bodies."""

from __future__ import annotations

from fastapi import FastAPI

from sandboxes import health
from sandboxes.records import Records
from sandboxes.refusals import install_refusals

from . import api, control
from .runtime import LockProvider
from .settings import Settings
from .state import LockState

# Every request of this API is a few hundred bytes; anything far larger is refused
# before it is read.
MAX_BODY = 64 * 1024


def create_app(settings: Settings) -> FastAPI:
    app = FastAPI(title="Sandbox lock provider", max_body_size=MAX_BODY)
    state = LockState(devices=set(settings.devices), records=Records(settings.state_dir))
    state.restore()
    app.state.provider = LockProvider(settings, state)
    app.include_router(api.router)
    app.include_router(control.door)
    app.include_router(control.router)
    app.include_router(health.router)
    install_refusals(app)
    return app
