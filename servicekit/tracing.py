"""OpenTelemetry set-up and W3C trace-context propagation.

The spans come from OpenTelemetry's instrumentation packages, installed here once for
every process: gRPC channels (`client_interceptors`, used by servicekit.grpc_server),
httpx's own connections and, when `OTEL_DB_SPANS=on`, psycopg. The gateway adds
FastAPI's. A provider call's span is servicekit.http_client_spans' (the providers' clients
use aiohttp's connections, which the instrumentation does not see), a gRPC server's spans
are servicekit.grpc_spans', a relay's publish span per
batch is `publish_span`'s, a dead-letter copy's produce span `produce_span`'s and an
applied event's consume span the inbox's (servicekit.inbox), all cheaper than the
instrumentation's own. aiokafka is not instrumented: its consumer's span per record
repeated the inbox's, and was made for the events a consumer ignores too.

The exporter is chosen by the standard OTEL_TRACES_EXPORTER variable (otlp, console or
none; none by default so a laptop run needs no collector; `make up` exports OTLP to
Jaeger). Tests pass their own in-memory exporter. The context travels in gRPC metadata,
in Kafka headers and in the outbox row, so the relay continues the trace of the change
that caused an effect.

Work nobody asked for opens no trace: a database statement outside any trace (the relay's
claims, the timers' polls) records nothing, and neither do a consumer's polls or health
checks; every trace starts with a request, a timer or a record that carries one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.instrumentation.grpc import aio_client_interceptors
from opentelemetry.instrumentation.grpc.filters import health_check, negate
from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased, Sampler
from opentelemetry.trace import SpanKind

from servicekit.trace_context import GuardedPropagator

_configured: TracerProvider | None = None
# Database spans' tracer, once they are on (OTEL_DB_SPANS=on).
_database: trace.Tracer | None = None


# Installed on import: whatever reads a carrier in this process goes through it, whether
# tracing is configured or not.
propagate.set_global_textmap(GuardedPropagator())


def configure_tracing(service_name: str, exporter: SpanExporter | None = None) -> TracerProvider:
    """Installs the process-wide tracer provider and the instrumentation once; later calls
    return the same provider."""
    global _configured
    if _configured is not None:
        return _configured
    resource = Resource.create({"service.name": service_name})
    processor = _processor(exporter)
    provider = _provider(resource, processor, sampler=None, main=True)
    trace.set_tracer_provider(provider)
    _instrument_libraries(resource, processor)
    _configured = provider
    return provider


def _processor(exporter: SpanExporter | None) -> SpanProcessor | None:
    if exporter is not None:
        return SimpleSpanProcessor(exporter)
    chosen = _exporter_from_environment()
    return batching(chosen) if chosen is not None else None


# Spans leave in batches of EXPORT_BATCH from a queue of up to QUEUED. The SDK's 512 of
# 2,048 made the exporter's thread, which holds the GIL while it encodes, send four times as
# many requests while the relay drains a burst (a span per row): 2,048 of 8,192 drained 8 %
# more rows/s under `make bench-relay` in the platform's configuration (two runs of three
# alternating rounds), and booking's CPU per checkout did not move. A queue left full while
# the collector is away holds about 26 MB (3.2 kB a produce span) where the SDK's held 6.5.
# OTEL_BSP_* still rule.
EXPORT_BATCH, QUEUED = 2048, 8192


def batching(exporter: SpanExporter) -> BatchSpanProcessor:
    """The batch processor every process exports through, at EXPORT_BATCH and QUEUED
    unless OTEL_BSP_MAX_EXPORT_BATCH_SIZE and OTEL_BSP_MAX_QUEUE_SIZE say otherwise."""

    def unless_set(setting: str, value: int) -> int | None:
        return None if os.environ.get(setting) else value  # None: the SDK reads the setting

    return BatchSpanProcessor(
        exporter,
        max_queue_size=unless_set("OTEL_BSP_MAX_QUEUE_SIZE", QUEUED),
        max_export_batch_size=unless_set("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", EXPORT_BATCH),
    )


def _provider(
    resource: Resource, processor: SpanProcessor | None, sampler: Sampler | None, main: bool
) -> TracerProvider:
    # Providers beside the main one differ only in what they sample; they share its
    # processor, which the main provider alone shuts down.
    provider = TracerProvider(resource=resource, sampler=sampler, shutdown_on_exit=main)
    if processor is not None:
        provider.add_span_processor(processor)
    return provider


def _instrument_libraries(resource: Resource, processor: SpanProcessor | None) -> None:
    HTTPXClientInstrumentor().instrument()
    if database_spans_enabled():
        from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

        global _database
        # A statement outside any trace (a claim, a poll) is housekeeping: never a root.
        inside_traces = _provider(resource, processor, ParentBased(root=ALWAYS_OFF), main=False)
        PsycopgInstrumentor().instrument(tracer_provider=inside_traces)
        _database = inside_traces.get_tracer("servicekit.driver_sql")


@contextlib.contextmanager
def database_batch(templates: Sequence[str]) -> Iterator[None]:
    """Statements sent as one message with their values bound on the client
    (servicekit.driver_sql) as one database span showing them as written: psycopg's own
    span would show the text sent, customers' values included."""
    if _database is None:
        yield
        return
    attributes = {"db.system": "postgresql", "db.statement": ";\n".join(templates)}
    with (
        _database.start_as_current_span("pipeline", kind=SpanKind.CLIENT, attributes=attributes),
        suppress_instrumentation(),
    ):
        yield


def database_spans_enabled() -> bool:
    """Database spans cost the checkout CPU (docs/performance.md, "Tracing costs"): on only when
    OTEL_DB_SPANS=on, and then only inside a trace."""
    return os.environ.get("OTEL_DB_SPANS", "off").strip().lower() == "on"


def _exporter_from_environment() -> SpanExporter | None:
    name = os.environ.get("OTEL_TRACES_EXPORTER", "none").strip().lower()
    if name == "otlp":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    if name == "console":
        return ConsoleSpanExporter()
    return None


_PRODUCING = {
    "messaging.system": "kafka",
    "messaging.operation.name": "send",
    "messaging.operation.type": "publish",
}


def produce_span(topic: str, message_id: str) -> tuple[trace.Span, list[tuple[str, bytes]]]:
    """Starts the span of sending one record (a dead-letter copy), a child of the current
    context, and returns it with the record's trace headers, which carry the span's own
    context; the caller ends it once the record is queued. The relay's records have one
    span per batch instead (publish_span).

    Made here rather than by aiokafka's instrumentation, which set nine attributes one
    by one, serialised the bootstrap list and awaited a hook for every record (it is not
    installed).
    """
    attributes: dict[str, str | int] = {
        **_PRODUCING,
        "messaging.destination.name": topic,
        "messaging.message.id": message_id,
    }
    span = _producing.start_span(f"{topic} send", kind=SpanKind.PRODUCER, attributes=attributes)
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=trace.set_span_in_context(span))
    return span, [(name, value.encode()) for name, value in carrier.items()]


def publish_span(topics: Sequence[str], traceparents: Sequence[str]) -> trace.Span:
    """Starts the span of publishing one batch of outbox rows, which the caller ends once
    the batch is queued. The batch serves many traces, so the span is the root of its own,
    linked to the context each row was written in (at most MAX_PUBLISH_LINKS); each record
    carries its row's own context (servicekit.relay), so a consumer's span is a child of
    the change that wrote the row, and one trace still follows each booking.

    One span a batch rather than one a record: a record's span (started, its context
    injected into the headers, encoded and exported) cost the relay about 90 µs of CPU,
    more than the rest of publishing the row (docs/performance.md, "The platform's
    configuration and the stripped one").
    """
    named = sorted(set(topics))
    attributes: dict[str, str | int] = {
        **_PRODUCING,
        "messaging.batch.message_count": len(traceparents),
    }
    if len(named) == 1:
        attributes["messaging.destination.name"] = named[0]
    links = []
    for traceparent in traceparents:
        linked = _span_context(traceparent)
        if linked is not None:
            links.append(trace.Link(linked))
            if len(links) == MAX_PUBLISH_LINKS:
                break
    name = f"{named[0]} publish" if len(named) == 1 else "outbox publish"
    return _producing.start_span(
        name, context=Context(), kind=SpanKind.PRODUCER, attributes=attributes, links=links
    )


def _span_context(traceparent: str) -> trace.SpanContext | None:
    """The span a W3C traceparent ("00-<trace>-<span>-<flags>") names; None for anything
    else. Read here rather than by the propagator, which builds a whole context per row."""
    parts = traceparent.split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or len(parts[2]) != 16 or len(parts[3]) != 2:
        return None
    try:
        trace_id, span_id, flags = (int(part, 16) for part in parts[1:])
    except ValueError:
        return None
    linked = trace.SpanContext(trace_id, span_id, True, trace.TraceFlags(flags))
    return linked if linked.is_valid else None


MAX_PUBLISH_LINKS = 128  # the SDK's default limit of links on one span
_producing = trace.get_tracer("servicekit.kafka")


def client_interceptors() -> list[Any]:
    """The client span of every RPC but health checks, with the trace context in the
    call's metadata."""
    interceptors: list[Any] = aio_client_interceptors(  # type: ignore[no-untyped-call]
        filter_=negate(health_check())
    )
    return interceptors


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


def current_trace_id() -> str:
    span_context = trace.get_current_span().get_span_context()
    return format(span_context.trace_id, "032x") if span_context.is_valid else ""
