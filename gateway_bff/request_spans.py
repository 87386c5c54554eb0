"""The server span of every HTTP request but probes and scrapes: where a booking's trace
starts, or continues the caller's when its request carries a `traceparent`.

OpenTelemetry's FastAPI instrumentation made this span, and at every request matched the
path against every route a second time to name it, collected some fifteen attributes
(host, user agent, URL and its parts), set each again on the span, and wrapped `send` and
`receive` to keep its metrics: a large part of the gateway's CPU per request
(docs/performance.md, "The gateway"). Here the span is started with what the request line
says and named by its route once the router has chosen one (`scope["route"]`), as the
instrumentation named it: `GET /v1/orgs/{org_id}/bookings/{booking_id}`. A response of
500 or more, or an exception, marks it as an error.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from servicekit import tracing

UNTRACED = frozenset({"/healthz", "/readyz", "/metrics"})  # probes and scrapes
_TRACE_HEADERS = frozenset({b"traceparent", b"tracestate", b"baggage"})


class RequestSpans:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        # The instrumentation's tracer name, so the spans read as they did.
        self._tracer = trace.get_tracer("opentelemetry.instrumentation.asgi")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in UNTRACED:
            await self.app(scope, receive, send)
            return
        method: str = scope["method"]
        attributes = {"http.request.method": method, "url.path": scope["path"]}
        span = self._tracer.start_span(
            method, tracing.context_from(_trace_headers(scope)), SpanKind.SERVER, attributes
        )
        token = otel_context.attach(trace.set_span_in_context(span))
        status = 500  # unless a response starts

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_noting_status)
        except Exception as error:
            span.record_exception(error)
            raise
        finally:
            _name_and_close(span, method, scope, status)
            otel_context.detach(token)


def _name_and_close(span: trace.Span, method: str, scope: Scope, status: int) -> None:
    route: Any = getattr(scope.get("route"), "path", None)
    if route:
        span.update_name(f"{method} {route}")
        span.set_attribute("http.route", str(route))
    span.set_attribute("http.response.status_code", status)
    if status >= 500:
        span.set_status(Status(StatusCode.ERROR))
    span.end()


def _trace_headers(scope: Scope) -> dict[str, str]:
    return {
        name.decode("latin-1"): value.decode("latin-1")
        for name, value in scope["headers"]
        if name in _TRACE_HEADERS
    }
