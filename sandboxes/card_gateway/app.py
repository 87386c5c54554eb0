"""The FastAPI application: routers, error mapping and the gateway's lifetime."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import httpx
from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from sandboxes import health
from sandboxes.records import Records

from . import api, checkout, control
from .background import Background
from .notifier import DEFAULT_RETRY_DELAYS, Notifier
from .runtime import Gateway
from .settings import Settings
from .state import GatewayError, GatewayState

NOTIFY_TIMEOUT_S = 5.0


def create_app(
    settings: Settings, *, retry_delays: Sequence[float] = DEFAULT_RETRY_DELAYS
) -> FastAPI:
    gateway = _build_gateway(settings, retry_delays)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        gateway.notifier.restore()  # on the loop: it sends what was left unsent
        yield
        await gateway.aclose()

    app = FastAPI(title="Sandbox card gateway", lifespan=lifespan)
    app.state.gateway = gateway
    app.include_router(api.router)
    app.include_router(checkout.router)
    app.include_router(control.router)
    app.include_router(health.router)
    app.add_exception_handler(GatewayError, _gateway_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(api.Unauthorized, _unauthorized)
    return app


def _build_gateway(settings: Settings, retry_delays: Sequence[float]) -> Gateway:
    state = GatewayState(records=Records(settings.state_dir))
    state.restore()
    client = httpx.AsyncClient(timeout=NOTIFY_TIMEOUT_S)
    notifier = Notifier(
        settings.webhook_secrets,
        settings.notify_url,
        state.faults,
        client,
        retry_delays,
        records=state.records,
    )
    return Gateway(settings, state, notifier, Background())


async def _gateway_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, GatewayError)
    body: dict[str, object] = {"error": exc.code}
    if exc.payment is not None:
        gateway: Gateway = request.app.state.gateway
        body["payment"] = gateway.payment_json(exc.payment)
    return JSONResponse(body, status_code=exc.status)


async def _invalid_request(_: Request, exc: Exception) -> JSONResponse:
    # 400 rather than FastAPI's 422: the status card providers use for malformed requests.
    assert isinstance(exc, RequestValidationError)
    detail = jsonable_encoder(exc.errors())
    return JSONResponse({"error": "invalid_request", "detail": detail}, status_code=400)


async def _unauthorized(_: Request, __: Exception) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"}
    return JSONResponse({"error": "unauthorized"}, status_code=401, headers=headers)
