"""Each request's access line (gateway_bff.edge): one line, written by the gate once the
answer has gone, naming the client, the request line, the status and the time the gateway
took, inside the request's trace; a hostile path or query is a line like any other."""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from starlette.types import Message

from gateway_bff.edge import ACCESS
from gateway_bff.limits import Limits
from servicekit.logs import JsonLines
from tests.gateway.unit.edge import (
    MemoryDirectory,
    client_at,
    gateway,
    make_parts,
    request_scope,
)

LINE = re.compile(r'(\S+) - "(\S+) (\S+) HTTP/1\.1" (\d{3}) (\d+\.\d) ms')


class Kept(logging.Handler):
    """The access lines with the trace each was written in."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[str, str]] = []
        self.written: list[str] = []  # as the process's JSON handler writes them

    def emit(self, record: logging.LogRecord) -> None:
        context = trace.get_current_span().get_span_context()
        trace_id = format(context.trace_id, "032x") if context.is_valid else ""
        self.lines.append((record.getMessage(), trace_id))
        self.written.append(JsonLines("gateway").format(record))


@pytest.fixture
def kept() -> Iterator[Kept]:
    handler = Kept()
    ACCESS.addHandler(handler)
    ACCESS.setLevel(logging.INFO)
    yield handler
    ACCESS.removeHandler(handler)
    ACCESS.setLevel(logging.NOTSET)


async def test_a_request_has_one_access_line_in_its_trace(
    kept: Kept, span_exporter: InMemorySpanExporter
) -> None:
    span_exporter.clear()
    org = str(uuid.uuid4())
    app = gateway(make_parts(Limits(), MemoryDirectory()))
    async with client_at(app, "192.0.2.7") as client:
        answer = await client.get(f"/v1/orgs/{org}/bookings", headers={"X-Dev-User": "ana"})
    assert answer.status_code == 404  # not a member: the gate answers, and still writes it
    [(message, trace_id)] = kept.lines
    found = LINE.fullmatch(message)
    assert found, message
    assert found.groups()[:4] == ("192.0.2.7:40000", "GET", f"/v1/orgs/{org}/bookings", "404")
    [server] = [s for s in span_exporter.get_finished_spans() if s.kind is SpanKind.SERVER]
    assert trace_id == format(server.context.trace_id, "032x")


async def test_a_hostile_path_and_query_are_written_escaped(kept: Kept) -> None:
    """Bytes no client library would send, straight to the app (uvicorn's httptools
    refuses such a request line with 400 before the app sees it, another server might not):
    the line is written, escaped, and the answer is not held up."""
    app = gateway(make_parts(Limits(), MemoryDirectory()))
    scope = request_scope(
        "GET",
        '/v1/catalogue\n"x/\u20ac',
        ("192.0.2.8", 40001),
        [(b"host", b"gateway.test")],
        query_string=b"q=\xff\n",
    )
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    assert sent[0]["status"] == 404
    [(message, _)] = kept.lines
    assert message.startswith('192.0.2.8:40001 - "GET /v1/catalogue%0A%22x/%E2%82%AC?q=\ufffd')
    [written] = kept.written
    assert "\n" not in written and json.loads(written)["message"] == message
