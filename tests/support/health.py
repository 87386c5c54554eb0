"""Watching a service's gRPC health as an orchestrator does: the Health/Watch stream.

A watcher sees each change as the server announces it, so a test can say "NOT_SERVING
within 2 s" without polling. The channel reconnects soon after a refused connection, so
a process that is starting is seen as soon as it listens.
"""

from __future__ import annotations

import asyncio
import time
from types import TracebackType
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.support import tls

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
# gRPC's default waits a second and more after a refused connection, which would hide how
# soon a restarted service listens. A private subchannel pool keeps a watcher off a
# connection that another channel made to a process since killed.
FAST_RECONNECT = (
    ("grpc.initial_reconnect_backoff_ms", 50),
    ("grpc.min_reconnect_backoff_ms", 50),
    ("grpc.max_reconnect_backoff_ms", 200),
)
WATCH_OPTIONS = (*FAST_RECONNECT, ("grpc.use_local_subchannel_pool", 1))


class StreamFailed(AssertionError):
    """The server went away (or was not there yet) while the stream was open."""


def status_name(status: int) -> str:
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(status))


class HealthWatch:
    """One Health/Watch stream on a server's overall health ("" service)."""

    def __init__(self, target: str, plaintext: bool = False) -> None:
        self.target = target
        # A service serves mutual TLS; plaintext only when a benchmark asked for it
        # (servicekit.config.PLAINTEXT_SETTING).
        self._channel = (
            grpc.aio.insecure_channel(target, options=WATCH_OPTIONS)
            if plaintext
            else tls.bare_channel(target, options=WATCH_OPTIONS)
        )
        self._stub = health_pb2_grpc.HealthStub(self._channel)
        self._call: Any = self._open()

    def _open(self) -> Any:
        return self._stub.Watch(health_pb2.HealthCheckRequest(), wait_for_ready=True)

    async def __aenter__(self) -> HealthWatch:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._call.cancel()
        await self._channel.close(None)

    async def next_status(self, within: float) -> int:
        """The next status the server announces (the first one is its current status)."""
        try:
            reply = await asyncio.wait_for(self._call.read(), within)
        except TimeoutError:
            raise AssertionError(f"{self.target}: no health change within {within} s") from None
        except grpc.aio.AioRpcError as error:
            raise StreamFailed(f"{self.target}: the health stream failed: {error.code()}") from None
        if reply is grpc.aio.EOF:  # type: ignore[attr-defined]  # missing from the stubs
            raise StreamFailed(f"{self.target}: the health stream ended")
        status: int = reply.status
        return status

    async def until(self, wanted: int, within: float) -> float:
        """Reads announcements until `wanted`; returns the seconds it took.

        A stream that fails (the process is being replaced) is opened again.
        """
        started = time.monotonic()
        seen: list[str] = []
        while True:
            left = within - (time.monotonic() - started)
            try:
                status = await self.next_status(max(left, 0.0))
            except StreamFailed as failure:
                if time.monotonic() - started >= within:
                    raise AssertionError(f"not {status_name(wanted)}: {failure}") from None
                await asyncio.sleep(0.05)
                self._call = self._open()
                continue
            except AssertionError as error:
                raise AssertionError(
                    f"{self.target}: not {status_name(wanted)} within {within} s "
                    f"(announced: {seen or 'nothing'}): {error}"
                ) from None
            seen.append(status_name(status))
            if status == wanted:
                return time.monotonic() - started
