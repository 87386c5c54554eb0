"""The gateway's server span per HTTP request (gateway_bff.request_spans): named by the route
the router chose, continuing a caller's trace, an error on a 5xx or an exception, none for
probes. An app of two routes behind the middleware, called in the test's process."""

from __future__ import annotations

import uuid

import httpx
import pytest
from fastapi import FastAPI
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from gateway_bff.request_spans import RequestSpans


def _app() -> FastAPI:
    # FastAPI's own spans off, as the gateway has them (gateway_bff.app).
    app = FastAPI(
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False}
    )

    @app.get("/v1/things/{thing_id}")
    async def thing(thing_id: str) -> dict[str, str]:
        if thing_id == "broken":
            raise RuntimeError("broken")
        return {"thing_id": thing_id}

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    app.add_middleware(RequestSpans)
    return app


async def _get(path: str, headers: dict[str, str] | None = None) -> int:
    transport = httpx.ASGITransport(app=_app(), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as http:
        return (await http.get(path, headers=headers)).status_code


def _servers(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER]


@pytest.fixture
def spans(span_exporter: InMemorySpanExporter) -> InMemorySpanExporter:
    span_exporter.clear()
    return span_exporter


async def test_a_request_span_is_named_by_its_route_and_continues_the_callers_trace(
    spans: InMemorySpanExporter,
) -> None:
    trace_id, parent_id = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    traceparent = f"00-{trace_id}-{parent_id}-01"
    assert await _get("/v1/things/a1", {"traceparent": traceparent}) == 200
    [span] = _servers(spans)
    assert span.name == "GET /v1/things/{thing_id}"
    assert format(span.context.trace_id, "032x") == trace_id
    assert span.parent is not None and format(span.parent.span_id, "016x") == parent_id
    attributes = dict(span.attributes or {})
    assert attributes["http.route"] == "/v1/things/{thing_id}"
    assert attributes["http.response.status_code"] == 200
    assert span.status.status_code is not StatusCode.ERROR


async def test_a_failed_request_is_an_error_and_a_probe_opens_no_span(
    spans: InMemorySpanExporter,
) -> None:
    assert await _get("/v1/things/broken") == 500
    assert await _get("/healthz") == 200
    [span] = _servers(spans)
    assert span.name == "GET /v1/things/{thing_id}"
    assert span.status.status_code is StatusCode.ERROR
    assert [event.name for event in span.events] == ["exception"]
