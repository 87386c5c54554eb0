"""Reading a trace from Jaeger's query API for the console's waterfall: the spans reduced to
what a waterfall draws, an unknown trace told apart from a Jaeger that is down or answers
something that is not a trace (both TracesUnavailable, never an exception of another kind)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from gateway_bff import traces as traces_module
from gateway_bff.identity import DevAuthenticator
from gateway_bff.main import bootstrap
from gateway_bff.settings import SERVICES, Settings
from gateway_bff.traces import Traces, TracesUnavailable
from tests.support import tls

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
JAEGER = {
    "data": [
        {
            "traceID": TRACE_ID,
            "processes": {"p1": {"serviceName": "gateway"}, "p2": {"serviceName": "booking"}},
            "spans": [
                {
                    "spanID": "b",
                    "operationName": "CreateBooking",
                    "processID": "p2",
                    "startTime": 1_000_500,
                    "duration": 200,
                    "references": [{"refType": "CHILD_OF", "spanID": "a"}],
                    "tags": [{"key": "otel.status_code", "value": "ERROR"}],
                },
                {
                    "spanID": "a",
                    "operationName": "POST /v1/orgs/{org_id}/bookings",
                    "processID": "p1",
                    "startTime": 1_000_000,
                    "duration": 900,
                    "references": [],
                    "tags": [{"key": "span.kind", "value": "server"}],
                },
            ],
        }
    ]
}


def _jaeger(status: int, body: bytes) -> Traces:
    def answer(request: httpx.Request) -> httpx.Response:
        assert request.url.path == f"/api/traces/{TRACE_ID}"
        return httpx.Response(status, content=body)

    return Traces("http://jaeger.test", transport=httpx.MockTransport(answer))


async def test_a_trace_is_its_spans_earliest_first_with_parent_service_and_error() -> None:
    spans = await _jaeger(200, json.dumps(JAEGER).encode()).spans(TRACE_ID)
    assert spans == [
        {
            "span_id": "a",
            "parent_id": None,
            "service": "gateway",
            "name": "POST /v1/orgs/{org_id}/bookings",
            "start_us": 1_000_000,
            "duration_us": 900,
            "error": False,
        },
        {
            "span_id": "b",
            "parent_id": "a",
            "service": "booking",
            "name": "CreateBooking",
            "start_us": 1_000_500,
            "duration_us": 200,
            "error": True,
        },
    ]


async def test_a_trace_jaeger_does_not_have_is_none() -> None:
    assert await _jaeger(404, b'{"data": null}').spans(TRACE_ID) is None


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (500, b"internal"),
        (200, b"<html>not json</html>"),
        (200, b'{"data": [{"spans": "many"}]}'),
        (200, json.dumps({"data": [{**JAEGER["data"][0], "spans": [{"spanID": 1}]}]}).encode()),
    ],
)
async def test_an_answer_that_is_not_a_trace_is_unavailable(status: int, body: bytes) -> None:
    with pytest.raises(TracesUnavailable):
        await _jaeger(status, body).spans(TRACE_ID)


async def test_an_answer_over_the_bound_is_unavailable_and_read_no_further(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(traces_module, "MAX_ANSWER_BYTES", 64 * 1024)
    sent: list[int] = []

    async def endless() -> AsyncIterator[bytes]:
        for _ in range(10_000):  # 640 MB, were it all read
            sent.append(1)
            yield b"[" * 65_536

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=endless())

    traces = Traces("http://jaeger.test", transport=httpx.MockTransport(answer))
    with pytest.raises(TracesUnavailable, match="over 65536 bytes"):
        await traces.spans(TRACE_ID)
    assert len(sent) <= 3


async def test_a_jaeger_that_does_not_answer_is_unavailable() -> None:
    def refuse(request: httpx.Request) -> Any:
        raise httpx.ConnectError("refused", request=request)

    traces = Traces("http://jaeger.test", transport=httpx.MockTransport(refuse))
    with pytest.raises(TracesUnavailable):
        await traces.spans(TRACE_ID)


async def test_a_jaeger_that_answers_a_byte_at_a_time_is_cut_off_at_the_deadline() -> None:
    async def dripping() -> AsyncIterator[bytes]:
        while True:  # each byte well within a read time-out; the whole, never
            await asyncio.sleep(0.01)
            yield b" "

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=dripping())

    traces = Traces("http://jaeger.test", timeout_s=0.25, transport=httpx.MockTransport(answer))
    async with asyncio.timeout(30):  # without the deadline the call would never end
        with pytest.raises(TracesUnavailable, match=r"took over 0\.5 s"):
            await traces.spans(TRACE_ID)


async def test_no_trace_store_configured_is_unavailable() -> None:
    with pytest.raises(TracesUnavailable):
        await Traces("").spans(TRACE_ID)


@pytest.fixture
async def gateway() -> AsyncIterator[httpx.AsyncClient]:
    """The gateway's app with Jaeger's address on a port nothing listens on, and `ops` an
    operator without a database to ask."""
    settings = Settings(
        address="127.0.0.1:0",
        database_url="postgresql+psycopg://nobody:nothing@127.0.0.1:1/none",
        service_addresses={name: "127.0.0.1:1" for name in SERVICES},
        kafka_bootstrap="127.0.0.1:1",
        tls_dir=tls.folder("gateway"),
        traces_url="http://127.0.0.1:1",
    )
    app = bootstrap(settings, DevAuthenticator())

    async def is_operator(user: str) -> bool:
        return user == "ops"

    app.state.parts.directory.is_operator = is_operator
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway.test") as client:
        yield client


async def test_the_route_answers_503_traces_unavailable_when_jaeger_is_down(
    gateway: httpx.AsyncClient,
) -> None:
    answer = await gateway.get(f"/v1/ops/traces/{TRACE_ID}", headers={"X-Dev-User": "ops"})
    assert (answer.status_code, answer.json()["code"]) == (503, "traces_unavailable")


@pytest.mark.parametrize("trace_id", ["nope", TRACE_ID.upper(), "0" * 32, TRACE_ID + "0"])
async def test_a_trace_id_that_is_not_32_lower_hex_names_nothing(
    gateway: httpx.AsyncClient, trace_id: str
) -> None:
    answer = await gateway.get(f"/v1/ops/traces/{trace_id}", headers={"X-Dev-User": "ops"})
    assert (answer.status_code, answer.json()["code"]) == (404, "not_found")


async def test_traces_are_for_operators_only(gateway: httpx.AsyncClient) -> None:
    answer = await gateway.get(f"/v1/ops/traces/{TRACE_ID}", headers={"X-Dev-User": "anna"})
    assert (answer.status_code, answer.json()["code"]) == (403, "forbidden")
