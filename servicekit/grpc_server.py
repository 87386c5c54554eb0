"""gRPC servers and channels as every service sets them up.

Health checking and server reflection on every server; the W3C trace context travels in
the call's metadata, so one trace follows a booking from the gateway into each service.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind

from servicekit import tracing

Registration = Callable[[grpc.aio.Server], None]


class TracingServerInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Continues the caller's trace for every unary call."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = await continuation(details)
        if handler is None or handler.unary_unary is None:
            return handler
        carrier = tracing.carrier_from_pairs(details.invocation_metadata or ())
        inner = handler.unary_unary
        method = details.method

        async def traced(request: Any, context: Any) -> Any:
            with tracing.tracer("servicekit.grpc").start_as_current_span(
                method, context=tracing.context_from(carrier), kind=SpanKind.SERVER
            ):
                return await inner(request, context)

        return grpc.unary_unary_rpc_method_handler(
            traced,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


class TracingClientInterceptor(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[type-arg]
    """Puts the current trace context into the metadata of every outgoing unary call."""

    async def intercept_unary_unary(
        self, continuation: Any, client_call_details: Any, request: Any
    ) -> Any:
        method = client_call_details.method
        name = method.decode() if isinstance(method, bytes) else str(method)
        with tracing.tracer("servicekit.grpc").start_as_current_span(name, kind=SpanKind.CLIENT):
            carrier: dict[str, str] = {}
            propagate.inject(carrier, context=trace.set_span_in_context(trace.get_current_span()))
            metadata = list(client_call_details.metadata or []) + list(carrier.items())
            call = await continuation(client_call_details._replace(metadata=metadata), request)
            await call
            return call


async def start_server(
    address: str, registrations: Sequence[Registration], service_names: Sequence[str]
) -> tuple[grpc.aio.Server, int]:
    """Starts a server with health and reflection; returns it and the bound port."""
    server = grpc.aio.server(interceptors=[TracingServerInterceptor()])
    for register in registrations:
        register(server)
    health_servicer = health.aio.HealthServicer()  # type: ignore[attr-defined]
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = [*service_names, health.SERVICE_NAME, reflection.SERVICE_NAME]
    reflection.enable_server_reflection(names, server)
    port = server.add_insecure_port(address)
    await server.start()
    for name in ("", *service_names):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return server, port


def channel(target: str) -> grpc.aio.Channel:
    interceptors: list[Any] = [TracingClientInterceptor()]
    return grpc.aio.insecure_channel(target, interceptors=interceptors)


async def abort_with_reason(context: Any, code: grpc.StatusCode, reason: str, detail: str) -> None:
    """Ends the call with a status and a machine-readable reason in the trailing metadata."""
    context.set_trailing_metadata((("reason", reason),))
    await context.abort(code, detail)


def reason_of(error: grpc.aio.AioRpcError) -> str:
    metadata: Any = error.trailing_metadata() or ()
    for key, value in metadata:
        if key == "reason":
            return value.decode() if isinstance(value, bytes) else str(value)
    return ""
