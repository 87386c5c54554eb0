"""What one HTTP request costs the client's process, by client: httpx as it comes, httpx
over aiohttp's connections (servicekit/http_transport.py: the benchmark's customers and the
providers' clients), and aiohttp alone. `python -m benchmarks.http_clients`.

A small JSON answer from uvicorn (httptools, uvloop) in a process of its own on loopback;
the client on uvloop, one request at a time and 16 at once, each client measured in the
same run, three rounds in turn, medians. The figure is the client process's CPU per
request, what a load generator on the platform's machine takes from the platform. Then a
provider's call as the services make it (servicekit.provider_http, with its span), against
the same call on httpx's own connections with OpenTelemetry's httpx instrumentation.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial

import aiohttp
import httpx
import uvloop
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from servicekit import tracing
from servicekit.http_transport import UNCOMPRESSED, AiohttpTransport
from servicekit.provider_http import JsonExchange, make_client
from tests.support.sandboxes import free_port
from tests.support.waiting import eventually

REQUESTS = int(os.environ.get("BENCH_REQUESTS", "2000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
BODY = b'{"booking_id":"b1","state":"confirmed","note":"' + b"x" * 400 + b'"}'

SERVER = f"""
import uvicorn
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({{"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]}})
    await send({{"type": "http.response.body", "body": {BODY!r}}})
uvicorn.run(app, host="127.0.0.1", port=int(__import__("sys").argv[1]), log_level="warning",
            loop="uvloop", http="httptools", access_log=False)
"""

Get = Callable[[], Awaitable[None]]


async def _cpu_ms_per_request(get: Get, concurrent: int) -> float:
    async def caller(count: int) -> None:
        for _ in range(count):
            await get()

    await asyncio.gather(*(caller(20) for _ in range(concurrent)))  # connections opened
    started = time.process_time()
    await asyncio.gather(*(caller(REQUESTS // concurrent) for _ in range(concurrent)))
    return (time.process_time() - started) * 1000 / (REQUESTS // concurrent * concurrent)


async def _round(url: str, concurrent: int) -> dict[str, float]:
    figures = {}
    async with httpx.AsyncClient(base_url=url) as plain:

        async def plain_get() -> None:
            (await plain.get("/v1/bookings/b1")).json()

        figures["httpx"] = await _cpu_ms_per_request(plain_get, concurrent)
    async with httpx.AsyncClient(
        base_url=url, headers=UNCOMPRESSED, transport=AiohttpTransport()
    ) as over:

        async def over_get() -> None:
            (await over.get("/v1/bookings/b1")).json()

        figures["httpx_over_aiohttp"] = await _cpu_ms_per_request(over_get, concurrent)
    async with aiohttp.ClientSession(base_url=url) as session:

        async def alone_get() -> None:
            async with session.get("/v1/bookings/b1") as answer:
                await answer.json()

        figures["aiohttp"] = await _cpu_ms_per_request(alone_get, concurrent)
    return figures


async def _provider_calls(url: str, concurrent: int) -> dict[str, float]:
    """A provider's call (servicekit.provider_http) with its span, on the client as
    `make_client` makes it and, for comparison, on httpx's own connections with
    OpenTelemetry's httpx instrumentation, as it was until 2026-12-07."""
    figures = {}
    headers = {"Authorization": "Bearer k", **UNCOMPRESSED}
    clients = {
        "provider_call_on_httpx_instrumented": httpx.AsyncClient(
            base_url=url, headers=headers, timeout=httpx.Timeout(5.0, connect=2.0)
        ),
        "provider_call": make_client(url, "k", 5.0),
    }
    for name, client in clients.items():
        exchange = JsonExchange(client, "bench")

        async def call(exchange: JsonExchange = exchange) -> None:
            await exchange.call("GET", "/v1/payments/p1", operation="read")

        figures[name] = await _cpu_ms_per_request(call, concurrent)
        await exchange.aclose()
    return figures


class _Dropped(SpanExporter):
    """Spans made, batched and handed over as in a service, then dropped: no collector."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


async def _accepts(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.close()
    return True


async def measure(port: int) -> dict[str, dict[str, float]]:
    await eventually(lambda: _accepts(port), within=20, every=0.1)
    url = f"http://127.0.0.1:{port}"
    result = {}
    for concurrent in (1, 16):
        result[f"concurrent_{concurrent}"] = await _medians(partial(_round, url, concurrent))
    # The providers' calls with spans as a service makes them: the SDK's tracer, the batch
    # processor, httpx's own connections instrumented; exported nowhere. After the
    # customers' clients, which make no span.
    tracing.configure_tracing("bench-http-clients").add_span_processor(tracing.batching(_Dropped()))
    result["provider_calls"] = await _medians(partial(_provider_calls, url, 1))
    for title, figures in result.items():
        print(f"{title}, client CPU ms per request (medians of {ROUNDS}):")
        for client, ms in figures.items():
            print(f"  {client}: {ms:.3f}")
    return result


async def _medians(one_round: Callable[[], Awaitable[dict[str, float]]]) -> dict[str, float]:
    rounds = [await one_round() for _ in range(ROUNDS)]
    return {client: round(statistics.median(r[client] for r in rounds), 3) for client in rounds[0]}


def main() -> None:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port)])
    try:
        print(json.dumps(uvloop.run(measure(port))))
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
