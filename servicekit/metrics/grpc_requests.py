"""Every unary gRPC call counted by method and status code, and timed.

The server's outermost interceptor, so it sees the status the guard answered with: a
refusal's code (INVALID_ARGUMENT, NOT_FOUND, ...), INTERNAL or UNAVAILABLE for a failure,
OK otherwise. A method with no handler is answered UNIMPLEMENTED by gRPC itself and not
counted, so the `method` label holds only the server's own methods.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from servicekit.metrics.counters import GRPC_DURATION, GRPC_REQUESTS


class RequestMetrics(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    def __init__(self) -> None:
        # Each method's counted handler, built once: the server asks at every call.
        self._counted: dict[str, tuple[Any, Any]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = await continuation(details)
        if handler is None or handler.unary_unary is None:
            return handler
        built = self._counted.get(details.method)
        if built is None or built[0] is not handler:
            built = self._counted[details.method] = (handler, _counted(details.method, handler))
        return built[1]


def _counted(method: str, handler: Any) -> Any:
    inner = handler.unary_unary
    duration = GRPC_DURATION.labels(method)

    async def counted(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        started = time.perf_counter()
        code = grpc.StatusCode.UNKNOWN
        try:
            response = await inner(request, context)
            code = context.code() or grpc.StatusCode.OK
            return response
        except grpc.aio.AbortError:
            code = context.code() or grpc.StatusCode.UNKNOWN
            raise
        except asyncio.CancelledError:
            code = grpc.StatusCode.CANCELLED
            raise
        finally:
            GRPC_REQUESTS.labels(method, code.name).inc()
            duration.observe(time.perf_counter() - started)

    return grpc.unary_unary_rpc_method_handler(
        counted,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )
