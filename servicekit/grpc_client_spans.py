"""The client span of a unary call, with the trace context in the call's metadata, opened by
the caller around the call instead of by a grpc.aio interceptor.

OpenTelemetry's aio client interceptor made the same span (same name, kind and attributes),
but as an interceptor every call went through grpc.aio's interception machinery (a task
and a wrapped call per call), evaluated its filter at every call (the health-check filter
took the method's name apart through typing Protocol isinstance checks) and awaited the
call's code and details to end the span in a callback. The gateway makes three such calls
per booking it shows; docs/performance.md ("The gateway") has what this saved. Here a
method's attributes are built once and the span ends when the awaited call does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import grpc
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.util.types import Attributes

from servicekit.grpc_spans import RPC_METHOD, RPC_SERVICE, RPC_STATUS, RPC_SYSTEM

Reply = TypeVar("Reply")
Metadata = Sequence[tuple[str, str]]


class ClientSpans:
    def __init__(self) -> None:
        # The instrumentation's tracer name, so the spans read as they did.
        self._tracer = trace.get_tracer("opentelemetry.instrumentation.grpc")
        self._attributes: dict[str, Attributes] = {}

    async def call(
        self,
        method: str,
        send: Callable[..., Awaitable[Reply]],
        request: Any,
        deadline_s: float,
        metadata: Metadata = (),
    ) -> Reply:
        """`send(request, timeout=deadline_s, metadata=)` inside the span of `method`
        ("/package.Service/Method"), the span's context added to `metadata`."""
        span = self._tracer.start_span(method, kind=SpanKind.CLIENT, attributes=self._of(method))
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(span))
        try:
            return await send(request, timeout=deadline_s, metadata=(*metadata, *carrier.items()))
        except grpc.aio.AioRpcError as error:
            span.set_attribute(RPC_STATUS, error.code().value[0])
            span.set_status(Status(StatusCode.ERROR, f"{error.code().name}: {error.details()}"))
            raise
        finally:
            span.end()

    def _of(self, method: str) -> Attributes:
        attributes = self._attributes.get(method)
        if attributes is None:
            service, _, name = method.lstrip("/").partition("/")
            attributes = {RPC_SYSTEM: "grpc", RPC_SERVICE: service, RPC_METHOD: name, RPC_STATUS: 0}
            self._attributes[method] = attributes
        return attributes
