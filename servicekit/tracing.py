"""OpenTelemetry set-up and W3C trace-context propagation.

The exporter is chosen by the standard OTEL_TRACES_EXPORTER variable (otlp, console or
none; none by default so a laptop run needs no collector). Tests pass their own
in-memory exporter. The context travels in gRPC metadata, in Kafka headers and in the
outbox row, so the relay continues the trace of the change that caused an effect.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)

_configured: TracerProvider | None = None
_TRACE_HEADERS = frozenset({"traceparent", "tracestate", "baggage"})


def configure_tracing(service_name: str, exporter: SpanExporter | None = None) -> TracerProvider:
    """Installs the process-wide tracer provider once; later calls return the same one."""
    global _configured
    if _configured is not None:
        return _configured
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        chosen = _exporter_from_environment()
        if chosen is not None:
            provider.add_span_processor(BatchSpanProcessor(chosen))
    trace.set_tracer_provider(provider)
    _configured = provider
    return provider


def _exporter_from_environment() -> SpanExporter | None:
    name = os.environ.get("OTEL_TRACES_EXPORTER", "none").strip().lower()
    if name == "otlp":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    if name == "console":
        return ConsoleSpanExporter()
    return None


def tracer(name: str) -> trace.Tracer:
    return trace.get_tracer(name)


def current_carrier() -> dict[str, str]:
    """The current trace context as W3C headers (traceparent, tracestate)."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def context_from(carrier: Mapping[str, str]) -> Context:
    """The context a carrier names; with no trace headers, a root one (a new trace)."""
    if not carrier:
        return Context()
    return propagate.extract(dict(carrier))


@contextlib.contextmanager
def continuing(carrier: Mapping[str, str], name: str) -> Iterator[None]:
    """Works on as part of the trace a carrier names (the one a thing was made in), linked
    to the current span: a change that a later, unrelated request brings about (a payment
    notification, a sweep) then stays in the trace of what it changes, which is how one
    trace follows a booking. With no trace headers, nothing changes."""
    if not carrier.get("traceparent"):
        yield
        return
    link = trace.Link(trace.get_current_span().get_span_context())
    tracer_ = trace.get_tracer("servicekit.tracing")
    with tracer_.start_as_current_span(name, context=context_from(carrier), links=[link]):
        yield


def carrier_from_pairs(pairs: Iterable[tuple[str, str | bytes]]) -> dict[str, str]:
    """The trace headers among gRPC metadata pairs; anything unreadable is left out.

    Metadata comes from callers: a trace header that is not text is no trace context,
    and must never fail the call it arrived with.
    """
    carrier: dict[str, str] = {}
    for key, value in pairs:
        name = key.lower()
        if name not in _TRACE_HEADERS:
            continue
        if isinstance(value, bytes):
            try:
                value = value.decode("ascii")
            except UnicodeDecodeError:
                continue
        carrier[name] = value
    return carrier


def current_trace_id() -> str:
    span_context = trace.get_current_span().get_span_context()
    return format(span_context.trace_id, "032x") if span_context.is_valid else ""
