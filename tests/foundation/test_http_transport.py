"""httpx's API over aiohttp's connections (servicekit.http_transport), as the benchmark's
customers and the providers' clients use it, against a local HTTP server. No platform; no
figures asserted."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from servicekit import tracing
from servicekit.http_client_spans import METHOD, STATUS, URL
from servicekit.http_transport import UNCOMPRESSED, AiohttpTransport
from servicekit.provider_http import JsonExchange, UnknownOutcome, make_client

Reply = Callable[[bytes], Awaitable[bytes | None]]  # the request's bytes -> the answer's


async def _serve(reply: Reply) -> tuple[asyncio.Server, str, list[bytes]]:
    """A server reading one request at a time (head and Content-Length body); `reply`
    None closes the connection without an answer."""
    seen: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                request = head + await reader.readexactly(length)
                seen.append(request)
                answer = await reply(request)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}", seen


def _answer(status: str, body: bytes, *extra: bytes) -> bytes:
    head = [f"HTTP/1.1 {status}".encode(), b"Content-Length: %d" % len(body), *extra]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


@pytest.fixture
async def json_server() -> AsyncIterator[tuple[str, list[bytes]]]:
    async def reply(request: bytes) -> bytes:
        if request.startswith(b"POST /checkout/"):
            return _answer("303 See Other", b"", b"Location: /done")
        body = json.dumps({"state": "confirmed", "path": request.split(b" ")[1].decode()})
        return _answer("200 OK", body.encode(), b"Content-Type: application/json")

    server, url, seen = await _serve(reply)
    async with server:
        yield url, seen


async def test_answers_come_back_as_httpx_responses_over_one_kept_connection(
    json_server: tuple[str, list[bytes]],
) -> None:
    url, seen = json_server
    hooked: list[str] = []

    async def count(request: httpx.Request) -> None:
        hooked.append(request.url.path)

    async with httpx.AsyncClient(
        base_url=url,
        headers=UNCOMPRESSED,
        transport=AiohttpTransport(),
        event_hooks={"request": [count]},
    ) as client:
        first = await client.get("/v1/bookings/b1", headers={"X-Dev-User": "ana"})
        second = await client.get("/v1/bookings/b2", params={"message_id": "<m@x>"})

    assert first.status_code == 200
    assert first.json() == {"state": "confirmed", "path": "/v1/bookings/b1"}
    assert first.headers["content-type"] == "application/json"
    assert second.json()["path"] == "/v1/bookings/b2?message_id=%3Cm%40x%3E"
    assert hooked == ["/v1/bookings/b1", "/v1/bookings/b2"]
    assert b"x-dev-user: ana" in seen[0].lower()
    assert b"accept-encoding: identity" in seen[0].lower()  # as the client asked
    assert len(seen) == 2


async def test_a_form_is_posted_as_httpx_encodes_it_and_a_redirect_is_not_followed(
    json_server: tuple[str, list[bytes]],
) -> None:
    url, seen = json_server
    async with httpx.AsyncClient(base_url=url, transport=AiohttpTransport()) as client:
        paid = await client.post("/checkout/pay_1", data={"outcome": "succeed"})
    assert paid.status_code == 303
    assert paid.headers["location"] == "/done"
    assert seen[0].endswith(b"\r\n\r\noutcome=succeed")
    assert b"content-type: application/x-www-form-urlencoded" in seen[0].lower()
    assert len(seen) == 1


async def test_no_answer_to_a_post_is_an_httpx_transport_error_and_the_next_is_answered() -> None:
    # A POST is sent once; aiohttp sends a GET once more when its kept connection closes
    # before an answer, as browsers do.
    answered = 0

    async def reply(_request: bytes) -> bytes | None:
        nonlocal answered
        answered += 1
        return None if answered == 1 else _answer("200 OK", b"{}")

    server, url, _ = await _serve(reply)
    async with server, httpx.AsyncClient(base_url=url, transport=AiohttpTransport()) as client:
        with pytest.raises(httpx.TransportError):
            await client.post("/v1/lost", json={"slot_id": "s1"})
        assert (await client.get("/v1/again")).status_code == 200
    assert answered == 2


async def test_a_late_answer_is_an_httpx_timeout() -> None:
    async def reply(_request: bytes) -> bytes:
        await asyncio.sleep(5)
        return _answer("200 OK", b"{}")

    server, url, _ = await _serve(reply)
    async with (
        server,
        httpx.AsyncClient(base_url=url, transport=AiohttpTransport(), timeout=0.2) as client,
    ):
        with pytest.raises(httpx.TimeoutException):
            await client.get("/v1/slow")


# A provider's client (servicekit.provider_http.make_client) over this transport.


async def _endless(request: bytes, writer: asyncio.StreamWriter, ended: asyncio.Event) -> None:
    """Answers with a body that never ends, until the client stops reading it."""
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
    writer.write(b"Transfer-Encoding: chunked\r\n\r\n")
    try:
        while True:
            writer.write(b"%x\r\n%s\r\n" % (CHUNK, b"[" * CHUNK))
            await writer.drain()
    except ConnectionError:
        ended.set()


async def _stream_server(
    answer: Callable[[bytes, asyncio.StreamWriter, asyncio.Event], Awaitable[None]],
) -> tuple[asyncio.Server, str, asyncio.Event]:
    ended = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await reader.readuntil(b"\r\n\r\n")
        try:
            await answer(request, writer, ended)
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", ended


CHUNK = 16 * 1024


async def test_a_provider_answer_past_the_bound_is_unknown_and_its_connection_is_dropped() -> None:
    server, url, ended = await _stream_server(_endless)
    exchange = JsonExchange(make_client(url, "key", 5.0), "test")
    async with server:
        with pytest.raises(UnknownOutcome, match="answer over"):
            await exchange.call("GET", "/endless", operation="read")
        await asyncio.wait_for(ended.wait(), 10)  # the server's next write found it closed
        await exchange.aclose()


async def test_a_provider_answer_cut_short_is_an_unknown_outcome() -> None:
    async def cut(_request: bytes, writer: asyncio.StreamWriter, _ended: asyncio.Event) -> None:
        writer.write(b'HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{"state":')
        await writer.drain()

    server, url, _ = await _stream_server(cut)
    exchange = JsonExchange(make_client(url, "key", 5.0), "test")
    async with server:
        with pytest.raises(UnknownOutcome, match="NetworkError"):
            await exchange.call("POST", "/codes", json={"pin": "1"}, operation="create")
        await exchange.aclose()


async def test_a_provider_unreachable_is_an_unknown_outcome() -> None:
    server = await asyncio.start_server(lambda _r, _w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    exchange = JsonExchange(make_client(f"http://127.0.0.1:{port}", "key", 5.0), "test")
    with pytest.raises(UnknownOutcome, match="NetworkError"):
        await exchange.call("GET", "/codes", operation="list")
    await exchange.aclose()


async def test_a_compressed_provider_answer_is_read_and_the_key_and_context_are_sent(
    span_exporter: InMemorySpanExporter,
) -> None:
    body = gzip.compress(json.dumps({"state": "paid"}).encode())

    async def reply(_request: bytes) -> bytes:
        return _answer("200 OK", body, b"Content-Encoding: gzip")

    server, url, seen = await _serve(reply)
    exchange = JsonExchange(make_client(url, "key-1", 5.0), "test")
    async with server:
        with tracing.tracer("tests").start_as_current_span("caller") as caller:
            status, document = await exchange.call("GET", "/payments/p1", operation="read")
        await exchange.aclose()

    assert (status, document) == (200, {"state": "paid"})
    head = seen[0].decode().lower()
    assert "authorization: bearer key-1" in head
    assert "accept-encoding: identity" in head
    (span,) = _children_of(caller, span_exporter)
    assert (span.name, span.kind, span.attributes) == (
        "GET",
        SpanKind.CLIENT,
        {METHOD: "GET", URL: f"{url}/payments/p1", STATUS: 200},
    )
    assert f"traceparent: 00-{span.context.trace_id:032x}-{span.context.span_id:016x}-" in head


async def test_a_refusal_marks_the_providers_span_as_an_error(
    span_exporter: InMemorySpanExporter,
) -> None:
    async def reply(_request: bytes) -> bytes:
        return _answer("409 Conflict", b'{"error": "taken"}')

    server, url, _ = await _serve(reply)
    exchange = JsonExchange(make_client(url, "key", 5.0), "test")
    async with server:
        with tracing.tracer("tests").start_as_current_span("caller") as caller:
            status, _ = await exchange.call("POST", "/codes", json={}, operation="create")
        await exchange.aclose()
    assert status == 409
    (span,) = _children_of(caller, span_exporter)
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None and span.attributes[STATUS] == 409


async def test_proxies_come_from_the_environment_and_no_proxy_is_respected(
    json_server: tuple[str, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    direct_url, direct_seen = json_server

    async def reply(_request: bytes) -> bytes:
        return _answer("200 OK", b"{}")

    proxy, proxy_url, proxied = await _serve(reply)
    monkeypatch.setenv("HTTP_PROXY", proxy_url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with proxy:
        async with httpx.AsyncClient(transport=AiohttpTransport()) as client:
            assert (await client.get(f"{direct_url}/v1/one")).status_code == 200
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        async with httpx.AsyncClient(transport=AiohttpTransport()) as client:
            assert (await client.get(f"{direct_url}/v1/two")).status_code == 200

    assert proxied[0].startswith(f"GET {direct_url}/v1/one HTTP/1.1".encode())
    assert [r.split(b" ")[1] for r in direct_seen] == [b"/v1/two"]


def _children_of(parent: trace.Span, exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.parent == parent.get_span_context()]
