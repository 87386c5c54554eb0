"""A small HTTP receiver for the gateway's notifications, until the HTTP gateway forwards them.

It hands the raw body and the signature header, untouched, to the same handler the gRPC
HandleNotification uses, and answers as the contract says: 400 invalid_signature, 503
when the gateway cannot be asked (so the gateway retries), otherwise 200.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Generator

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from services.payment.adapters.card_gateway import GatewayUnavailable
from services.payment.domain.errors import InvalidSignature
from services.payment.service_layer import handlers
from services.payment.service_layer.dependencies import PaymentDeps

log = logging.getLogger(__name__)
PATH = "/v1/payments/notifications"
SIGNATURE_HEADER = "Gateway-Signature"


def receiver_app(deps: PaymentDeps) -> Starlette:
    async def receive(request: Request) -> JSONResponse:
        body = await request.body()
        signature = request.headers.get(SIGNATURE_HEADER, "")
        try:
            await handlers.handle_notification(deps, body, signature)
        except InvalidSignature:
            return _problem(400, "invalid_signature", "Invalid signature")
        except GatewayUnavailable:
            return _problem(503, "gateway_unavailable", "Payment gateway unavailable")
        return JSONResponse({"accepted": True})

    return Starlette(routes=[Route(PATH, receive, methods=["POST"])])


def _problem(status: int, code: str, title: str) -> JSONResponse:
    body = {"type": "about:blank", "title": title, "status": status, "code": code}
    return JSONResponse(body, status_code=status, media_type="application/problem+json")


class _QuietServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        # The service's runtime owns SIGTERM; uvicorn must not take it over.
        yield


class NotificationReceiver:
    def __init__(self, deps: PaymentDeps, address: str) -> None:
        self._address = address
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        config = uvicorn.Config(receiver_app(deps), log_level="warning", lifespan="off")
        self._server = _QuietServer(config)
        self._task: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        port: int = self._socket.getsockname()[1]
        return port

    @property
    def url(self) -> str:
        host = self._socket.getsockname()[0]
        return f"http://{host}:{self.port}{PATH}"

    async def start(self) -> None:
        host, _, port = self._address.rpartition(":")
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, int(port)))
        self._task = asyncio.create_task(self._server.serve(sockets=[self._socket]))
        # uvicorn exposes readiness only as a flag, so it is polled briefly.
        while not self._server.started and not self._task.done():
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        self._server.should_exit = True
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 5)
        self._socket.close()
