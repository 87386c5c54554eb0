"""Every unary call a service answers is one server span in the caller's trace, with the
status it ended with; a refusal is noted by its code, an unexpected error with its
exception. Health checks open no span."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

# Any message will do for the probe's request and answer; the health check's is at hand.
from grpc_health.v1.health_pb2 import HealthCheckRequest as Message
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from servicekit.grpc_server import start_server
from servicekit.refusals import NotFound
from tests.support import tls

SERVICE = "liftfit.probe.v1.Probe"
METHOD = f"/{SERVICE}/Answer"


async def _answer(request: Message, context: grpc.aio.ServicerContext[Any, Any]) -> Message:
    if request.service == "refuse":
        raise NotFound("nothing by that name")
    if request.service == "fail":
        raise RuntimeError("a bug")
    return Message(service="answered")


def _register(server: grpc.aio.Server) -> None:
    handler = grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "Answer": grpc.unary_unary_rpc_method_handler(
                _answer,
                request_deserializer=Message.FromString,
                response_serializer=Message.SerializeToString,
            )
        },
    )
    server.add_generic_rpc_handlers((handler,))


@pytest.fixture
async def probe(span_exporter: InMemorySpanExporter) -> AsyncIterator[grpc.aio.Channel]:
    server, port, _ = await start_server(tls.endpoint("booking"), [_register], [SERVICE])
    client = tls.channel(f"127.0.0.1:{port}")
    try:
        yield client
    finally:
        await client.close(grace=None)
        await server.stop(grace=None)


def _stub(client: grpc.aio.Channel) -> Any:
    return client.unary_unary(
        METHOD,
        request_serializer=Message.SerializeToString,
        response_deserializer=Message.FromString,
    )


async def _call(client: grpc.aio.Channel, payload: str) -> grpc.StatusCode:
    try:
        await _stub(client)(Message(service=payload), timeout=10)
    except grpc.aio.AioRpcError as error:
        return error.code()
    return grpc.StatusCode.OK


async def _server_span_ended(exporter: InMemorySpanExporter, trace_id: int) -> list[ReadableSpan]:
    """The server spans of the trace, once one has ended: the client may have its answer a
    moment before the server's span is closed and exported (seen on a loaded machine)."""
    async with asyncio.timeout(10):
        while not (spans := _server_spans(exporter, trace_id)):
            await asyncio.sleep(0.01)
    return spans


def _server_spans(exporter: InMemorySpanExporter, trace_id: int) -> list[ReadableSpan]:
    return [
        span
        for span in exporter.get_finished_spans()
        if span.kind is SpanKind.SERVER and span.context.trace_id == trace_id
    ]


@pytest.mark.parametrize(
    ("payload", "code", "status"),
    [
        ("hello", grpc.StatusCode.OK, StatusCode.UNSET),
        ("refuse", grpc.StatusCode.NOT_FOUND, StatusCode.ERROR),
        ("fail", grpc.StatusCode.INTERNAL, StatusCode.ERROR),
    ],
)
async def test_each_call_is_one_server_span_in_the_callers_trace(
    probe: grpc.aio.Channel,
    span_exporter: InMemorySpanExporter,
    payload: str,
    code: grpc.StatusCode,
    status: StatusCode,
) -> None:
    with trace.get_tracer("test").start_as_current_span("caller") as caller:
        assert await _call(probe, payload) is code
    (span,) = await _server_span_ended(span_exporter, caller.get_span_context().trace_id)
    assert span.name == METHOD
    assert span.parent is not None and span.parent.trace_id == caller.get_span_context().trace_id
    attributes = dict(span.attributes or {})
    assert attributes["rpc.system"] == "grpc"
    assert attributes["rpc.service"] == SERVICE
    assert attributes["rpc.method"] == "Answer"
    assert attributes["rpc.grpc.status_code"] == code.value[0]
    assert span.status.status_code is status
    exceptions = [event for event in span.events if event.name == "exception"]
    # Only the unexpected error is recorded with its exception; a refusal is an answer.
    assert [e.attributes and e.attributes["exception.type"] for e in exceptions] == (
        ["RuntimeError"] if payload == "fail" else []
    )


async def test_a_call_without_trace_headers_starts_a_trace(
    span_exporter: InMemorySpanExporter,
) -> None:
    server, port, _ = await start_server(tls.endpoint("booking"), [_register], [SERVICE])
    try:
        async with tls.bare_channel(f"127.0.0.1:{port}") as bare:
            metadata = (("traceparent", "00-not-a-trace-01"),)
            answer = await _stub(bare)(Message(service="hello"), metadata=metadata, timeout=10)
            health = health_pb2_grpc.HealthStub(bare)
            await health.Check(health_pb2.HealthCheckRequest(service=SERVICE), timeout=10)
    finally:
        await server.stop(grace=None)
    assert answer.service == "answered"
    names = [span.name for span in span_exporter.get_finished_spans()]
    roots = [
        span
        for span in span_exporter.get_finished_spans()
        if span.name == METHOD and span.parent is None
    ]
    assert roots, "a call with an unreadable traceparent starts its own trace"
    assert not [name for name in names if name.startswith("/grpc.health")]
