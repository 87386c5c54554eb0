"""Every unary gRPC call counted by method and status code, and timed.

The server's outermost interceptor, so it sees the status the guard answered with: a
refusal's code (INVALID_ARGUMENT, NOT_FOUND, ...), INTERNAL or UNAVAILABLE for a failure,
OK otherwise. A method with no handler is answered UNIMPLEMENTED by gRPC itself and not
counted, so the `method` label holds only the server's own methods.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc

from servicekit.grpc_wrapping import Behaviour, UnaryWrapper
from servicekit.metrics.counters import GRPC_DURATION, GRPC_REQUESTS


class RequestMetrics(UnaryWrapper):
    def wrap(self, method: str, inner: Behaviour) -> Behaviour:
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

        return counted
