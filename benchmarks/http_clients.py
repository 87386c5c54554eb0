"""What one HTTP request costs the client's process, by client: httpx as it comes, httpx
over aiohttp's connections (benchmarks/browser.py, the benchmark's customers), and aiohttp
alone. `python -m benchmarks.http_clients`.

A small JSON answer from uvicorn (httptools, uvloop) in a process of its own on loopback;
the client on uvloop, one request at a time and 16 at once, each client measured in the
same run, three rounds in turn, medians. The figure is the client process's CPU per
request, what a load generator on the platform's machine takes from the platform.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

import aiohttp
import httpx
import uvloop

from benchmarks.browser import AiohttpTransport
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
    async with httpx.AsyncClient(base_url=url, transport=AiohttpTransport()) as over:

        async def over_get() -> None:
            (await over.get("/v1/bookings/b1")).json()

        figures["httpx_over_aiohttp"] = await _cpu_ms_per_request(over_get, concurrent)
    async with aiohttp.ClientSession(base_url=url) as session:

        async def alone_get() -> None:
            async with session.get("/v1/bookings/b1") as answer:
                await answer.json()

        figures["aiohttp"] = await _cpu_ms_per_request(alone_get, concurrent)
    return figures


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
        rounds = [await _round(url, concurrent) for _ in range(ROUNDS)]
        result[f"concurrent_{concurrent}"] = {
            client: round(statistics.median(r[client] for r in rounds), 3) for client in rounds[0]
        }
        print(f"{concurrent} at once, client CPU ms per request (medians of {ROUNDS}):")
        for client, ms in result[f"concurrent_{concurrent}"].items():
            print(f"  {client}: {ms:.3f}")
    return result


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
