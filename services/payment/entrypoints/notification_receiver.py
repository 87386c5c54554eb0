"""A small HTTP receiver for the gateway's notifications, until the HTTP gateway forwards them.

It answers as the contract says: 400 invalid_signature, 503 when the gateway or the
database cannot be reached (so the gateway sends the notification again), otherwise 200.

The endpoint is open to anyone who can reach it, so it spends as little as it can on a
request it will refuse: the signature header is read and its time checked before the
body is received; a body over 64 KiB is refused with 413 as soon as its length is known,
without reading it whole; and the number of requests handled at once is bounded (uvicorn
answers 503 beyond it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Generator

import uvicorn
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from servicekit.faults import Fault, classify
from servicekit.outage import OutageLog
from services.payment.domain.errors import GatewayUnreachable, InvalidSignature
from services.payment.domain.signature import read_signature
from services.payment.service_layer import handlers
from services.payment.service_layer.dependencies import PaymentDeps

log = logging.getLogger(__name__)
PATH = "/v1/payments/notifications"
SIGNATURE_HEADER = "Gateway-Signature"
MAX_BODY = 64 * 1024
MAX_CONCURRENT = 64


class BodyTooLarge(Exception):
    pass


def receiver_app(deps: PaymentDeps) -> Starlette:
    database = OutageLog(log, "notification receiver: the database")

    async def receive(request: Request) -> JSONResponse:
        try:
            signature = read_signature(request.headers.get(SIGNATURE_HEADER, ""), int(time.time()))
            body = await _bounded_body(request)
            await handlers.handle_notification(deps, body, signature)
        except InvalidSignature:
            return _problem(400, "invalid_signature", "Invalid signature")
        except BodyTooLarge:
            return _problem(413, "payload_too_large", f"The body exceeds {MAX_BODY} bytes")
        except ClientDisconnect:
            return _problem(400, "malformed_request", "The body did not arrive whole")
        except GatewayUnreachable:  # the gateway adapter logs its outage
            return _problem(503, "gateway_unavailable", "Payment gateway unavailable")
        except Exception as error:
            fault = classify(error)
            if fault is Fault.PERMANENT:
                raise
            if fault is Fault.OUTAGE:
                database.failed(error)  # once per outage, not once per notification
            else:
                log.warning("notification not applied (%s), to be sent again: %r", fault, error)
            return _problem(503, "unavailable", "Temporarily unavailable; send it again")
        database.succeeded()
        return JSONResponse({"accepted": True})

    return Starlette(routes=[Route(PATH, receive, methods=["POST"])])


async def _bounded_body(request: Request) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _problem(status: int, code: str, title: str) -> JSONResponse:
    body = {"type": "about:blank", "title": title, "status": status, "code": code}
    return JSONResponse(body, status_code=status, media_type="application/problem+json")


class _QuietServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        # The service's runtime owns SIGTERM; uvicorn must not take it over.
        yield


class NotificationReceiver:
    """The HTTP endpoint as a supervised worker: `run` serves until the service stops."""

    def __init__(self, deps: PaymentDeps, address: str) -> None:
        self._deps = deps
        self._address = address
        self._socket: socket.socket | None = None

    def bind(self) -> None:
        """Binds the listening socket once; restarts of the worker keep it."""
        if self._socket is not None:
            return
        host, _, port = self._address.rpartition(":")
        listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, int(port)))
        self._socket = listening

    @property
    def port(self) -> int:
        assert self._socket is not None, "bind() first"
        port: int = self._socket.getsockname()[1]
        return port

    @property
    def url(self) -> str:
        assert self._socket is not None, "bind() first"
        host = self._socket.getsockname()[0]
        return f"http://{host}:{self.port}{PATH}"

    async def run(self, stopping: asyncio.Event) -> None:
        self.bind()
        assert self._socket is not None
        config = uvicorn.Config(
            receiver_app(self._deps),
            log_level="warning",
            lifespan="off",
            limit_concurrency=MAX_CONCURRENT,
        )
        server = _QuietServer(config)
        # uvicorn closes the sockets it serves when it shuts down: it gets a duplicate, and
        # the bound socket stays open for the next run after a restart.
        serving = asyncio.create_task(server.serve(sockets=[self._socket.dup()]))
        stop_wait = asyncio.create_task(stopping.wait())
        try:
            await asyncio.wait([serving, stop_wait], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop_wait.cancel()
            server.should_exit = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(serving), 5)
        if not stopping.is_set():
            serving.result()  # raises what ended the server early; the supervisor restarts it

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
