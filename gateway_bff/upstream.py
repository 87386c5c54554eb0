"""The services behind the gateway, called over gRPC.

Every call has a deadline, its client span with the trace context in its metadata
(servicekit.grpc_client_spans, opened here rather than by an interceptor on the channel:
cheaper) and the caller's name in its metadata. Reads are tried again when a service did
not answer or asked to be asked again; writes never are here (the services de-duplicate
writes by their idempotency keys, but only the client knows whether to send one again). A
refusal, or no answer within the deadline, leaves as a Problem (gateway_bff.problems).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from liftfit.access.v1 import access_pb2_grpc
from liftfit.booking.v1 import booking_pb2_grpc
from liftfit.notify.v1 import notify_pb2_grpc
from liftfit.ops.v1 import operations_pb2_grpc
from liftfit.payment.v1 import payment_pb2_grpc

from gateway_bff.problems import refused
from servicekit import grpc_server
from servicekit.errors import reason_of
from servicekit.grpc_client_spans import ClientSpans

Reply = TypeVar("Reply")
READ_TRIES = 3
_RETRY_PAUSE_S = 0.05
USER_METADATA = "x-liftfit-user"
_SPANS = ClientSpans()


class Upstream:
    """One service: its channel, its deadline, and calls that end in a reply or a Problem."""

    def __init__(self, name: str, target: str, tls_dir: str, deadline_s: float) -> None:
        self.name = name
        self.channel = grpc_server.channel(
            target, tls_dir, grpc_server.PROMPT_RECONNECT, client_spans=False
        )
        self.deadline_s = deadline_s

    async def read(
        self, method: Callable[..., Awaitable[Reply]], request: Any, user: str = ""
    ) -> Reply:
        """A call without effects: tried again within the deadline when that may help."""
        deadline = time.monotonic() + self.deadline_s
        for attempt in range(1, READ_TRIES + 1):
            remaining = deadline - time.monotonic()
            try:
                return await _SPANS.call(
                    _name(method), method, request, max(remaining, 0.01), _who(user)
                )
            except grpc.aio.AioRpcError as error:
                if attempt == READ_TRIES or not _worth_again(error) or remaining < 0.1:
                    raise refused(self.name, error) from None
            await asyncio.sleep(_RETRY_PAUSE_S * attempt)
        raise AssertionError("unreachable")

    async def write(
        self, method: Callable[..., Awaitable[Reply]], request: Any, user: str = ""
    ) -> Reply:
        try:
            return await _SPANS.call(_name(method), method, request, self.deadline_s, _who(user))
        except grpc.aio.AioRpcError as error:
            raise refused(self.name, error) from None

    async def serving(self, timeout_s: float = 1.0) -> bool:
        """The service answers its gRPC health check as serving."""
        stub = health_pb2_grpc.HealthStub(self.channel)
        try:
            reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=timeout_s)
        except grpc.aio.AioRpcError:
            return False
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    async def close(self) -> None:
        await self.channel.close(None)


def _who(user: str) -> tuple[tuple[str, str], ...]:
    return ((USER_METADATA, user),) if user else ()


def _name(method: Callable[..., Any]) -> str:
    """The span's name: the method's path, as the stubs of Services' channels know it."""
    return str(getattr(method, "full_name", "grpc call"))


def _worth_again(error: grpc.aio.AioRpcError) -> bool:
    if error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return True
    return reason_of(error) in ("unavailable", "conflict")


class Services:
    """The four services and their stubs."""

    def __init__(self, addresses: dict[str, str], tls_dir: str, deadline_s: float) -> None:
        self.upstreams = {
            name: Upstream(name, target, tls_dir, deadline_s) for name, target in addresses.items()
        }
        self.booking = booking_pb2_grpc.BookingServiceStub(self.upstreams["booking"].channel)
        self.payment = payment_pb2_grpc.PaymentServiceStub(self.upstreams["payment"].channel)
        self.access = access_pb2_grpc.AccessServiceStub(self.upstreams["access"].channel)
        self.notify = notify_pb2_grpc.NotifyServiceStub(self.upstreams["notify"].channel)
        # Every service serves the same operators' view beside its own API.
        self.ops = {
            name: operations_pb2_grpc.OperationsServiceStub(upstream.channel)
            for name, upstream in self.upstreams.items()
        }

    def __getitem__(self, name: str) -> Upstream:
        return self.upstreams[name]

    async def missing(self) -> list[str]:
        """The services that do not answer their health check now."""
        names = list(self.upstreams)
        answers = await asyncio.gather(*(self.upstreams[n].serving() for n in names))
        return [name for name, serving in zip(names, answers, strict=True) if not serving]

    async def close(self) -> None:
        for upstream in self.upstreams.values():
            await upstream.close()
