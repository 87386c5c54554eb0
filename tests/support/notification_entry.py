"""Where the card gateway's notifications enter in a test: the real HTTP gateway.

`python -m gateway_bff` is what production runs; here the same app (gateway_bff.main's
bootstrap) is served by uvicorn in the test's own process on a free port, and forwards
each notification to the payment service at `payment_target` over gRPC, as in production.

Only the notification route (and the return page) is meant for use: the other services'
addresses are placeholders that nothing dials (channels connect on a first call), and the
gateway's own database is never opened (the route does not read it, and with no operators
to create the start-up does not either).

Start and stop it in the test's event loop: the gRPC channels belong to the loop that
built the app, so the app is built in `start()`, inside the running loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Generator
from types import TracebackType

import uvicorn

from gateway_bff.identity import DevAuthenticator
from gateway_bff.main import bootstrap
from gateway_bff.settings import SERVICES, Settings
from tests.support import tls

PATH = "/v1/payments/notifications"
RETURN_PATH = "/v1/payments/return"
UNUSED_ADDRESS = "127.0.0.1:9"  # the discard port: a placeholder nothing dials
UNUSED_DATABASE = "postgresql+psycopg://unused:unused@127.0.0.1:9/unused"
STARTED_WITHIN_S = 10.0
STOPPED_WITHIN_S = 10.0


class _InTestServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        # Ctrl-C and SIGTERM stay pytest's: uvicorn must not take them over.
        yield


def gateway_settings(payment_target: str, deadline_s: float = 3.0) -> Settings:
    """The gateway's settings with only the payment service real."""
    addresses = {name: UNUSED_ADDRESS for name in SERVICES} | {"payment": payment_target}
    return Settings(
        address=UNUSED_ADDRESS,  # the server is handed its bound socket instead
        database_url=UNUSED_DATABASE,
        service_addresses=addresses,
        kafka_bootstrap=UNUSED_ADDRESS,
        tls_dir=tls.folder("gateway"),
        deadline_s=deadline_s,
        operators=(),
    )


class NotificationEntry:
    """The gateway's app served on 127.0.0.1; `url` is where the card gateway posts."""

    def __init__(self, payment_target: str) -> None:
        self.payment_target = payment_target
        self._socket: socket.socket | None = None
        self._server: _InTestServer | None = None
        self._serving: asyncio.Task[None] | None = None

    @property
    def address(self) -> str:
        assert self._socket is not None, "start() first"
        host, port = self._socket.getsockname()[:2]
        return f"{host}:{port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}{PATH}"

    @property
    def return_url(self) -> str:
        return f"http://{self.address}{RETURN_PATH}"

    async def start(self) -> None:
        listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listening.bind(("127.0.0.1", 0))
        self._socket = listening
        app = bootstrap(gateway_settings(self.payment_target), DevAuthenticator())
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5
        )
        self._server = _InTestServer(config)
        self._serving = asyncio.create_task(self._server.serve(sockets=[listening]))
        try:
            await self._until_started()
        except BaseException:
            await self.stop()
            raise

    async def _until_started(self) -> None:
        assert self._server is not None and self._serving is not None
        deadline = asyncio.get_running_loop().time() + STARTED_WITHIN_S
        while not self._server.started:
            if self._serving.done():
                self._serving.result()  # raises what stopped it
                raise AssertionError("the gateway stopped before it served")
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"the gateway did not serve within {STARTED_WITHIN_S} s")
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        """Stops serving, closes its channels (the app's lifespan) and its socket."""
        if self._server is not None and self._serving is not None:
            self._server.should_exit = True
            await asyncio.wait_for(self._serving, STOPPED_WITHIN_S)
        self._server = self._serving = None
        if self._socket is not None:
            self._socket.close()  # uvicorn closed it already, unless it never served
            self._socket = None

    async def __aenter__(self) -> NotificationEntry:
        await self.start()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()
