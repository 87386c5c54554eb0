"""The benchmark's customers' HTTP connections: httpx's API over aiohttp's client.

The customers are the load, and on one machine their CPU is taken from the platform's. A
request through httpx's own connections (httpcore, anyio, h11) cost the customers' process
0.5 ms (one at a time) to 0.8 ms (16 at once) of CPU against uvicorn on loopback; aiohttp's
client alone 0.07-0.13 ms, and httpx's client over it, as here, about 0.27 ms (2026-12-06,
docs/performance.md). The customers keep httpx's API (its responses, errors and request
hooks, which tests/gateway/api.py and the chaos workload share); only the connections
change. The services call the providers through httpx as it comes.

A response is read whole before it is returned: the customers read small JSON and pages.
The URL goes as httpx encoded it. Where a kept connection closes before an answer, aiohttp
sends a GET once more (RFC 9112, as browsers do); a POST it sends once.
"""

from __future__ import annotations

import aiohttp
import httpx
from yarl import URL

# httpx's default asks for compressed answers; the customers read them as they come.
_NOT_SENT = frozenset({"accept-encoding"})


class AiohttpTransport(httpx.AsyncBaseTransport):
    """One aiohttp session (its keep-alive connections), opened on the first request."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        session = self._session or self._open()
        headers = [(k, v) for k, v in request.headers.multi_items() if k not in _NOT_SENT]
        try:
            async with session.request(
                request.method,
                URL(str(request.url), encoded=True),
                headers=headers,
                data=request.content or None,
                allow_redirects=False,
                timeout=_timeout_of(request),
            ) as answer:
                body = await answer.read()
        except TimeoutError as late:
            raise httpx.ReadTimeout(f"no answer in time: {late!r}", request=request) from late
        except aiohttp.ClientError as lost:
            raise httpx.NetworkError(f"no answer: {lost!r}", request=request) from lost
        return httpx.Response(
            answer.status,
            headers=_without_framing(answer.raw_headers),
            content=body,
            request=request,
        )

    def _open(self) -> aiohttp.ClientSession:
        self._session = aiohttp.ClientSession(
            auto_decompress=False, skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding")
        )
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _timeout_of(request: httpx.Request) -> aiohttp.ClientTimeout:
    limits = request.extensions.get("timeout", {})
    return aiohttp.ClientTimeout(sock_connect=limits.get("connect"), sock_read=limits.get("read"))


def _without_framing(
    headers: tuple[tuple[bytes, bytes], ...],
) -> list[tuple[bytes, bytes]]:
    """The answer's headers less how it was framed: the body is handed over whole."""
    return [(k, v) for k, v in headers if k.lower() != b"transfer-encoding"]
