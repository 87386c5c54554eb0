"""httpx's API over aiohttp's connections: the providers' clients and the benchmark's
customers.

A request through httpx's own connections (httpcore, anyio, h11) cost its process 0.5 ms
(one at a time) to 0.8 ms (16 at once) of CPU against uvicorn on loopback; aiohttp's client
alone 0.07-0.13 ms, and httpx's client over it, as here, about 0.27 ms (2026-12-06,
docs/performance.md, "The customers' connections"). Callers keep httpx's API: its requests,
responses, errors, time-outs and hooks; only the connections change.

The answer's body streams: a caller that reads it in chunks (servicekit.provider_http's
bounded read) stops where it wants, and what it did not read is never read. Headers go as
httpx made them, and httpx decodes a compressed body as it would its own. Errors come as
httpx's: no connection or a broken one is an `httpx.NetworkError` (a `TransportError`), a
time-out an `httpx.TimeoutException`, so a caller's reading of a failure does not change.

Where a kept connection closes before an answer, aiohttp sends an idempotent request (GET,
PUT, DELETE) once more, as browsers do (RFC 9112, 9.3.1); a POST it sends once. A kept
connection is dropped after `KEEPALIVE_S` idle, before the usual servers' own idle limits
(uvicorn's 5 s), so a POST rarely meets a connection the server has just closed.
"""

from __future__ import annotations

import urllib.request
from collections.abc import AsyncIterator

import aiohttp
import httpx
from yarl import URL

KEEPALIVE_S = 4.0
CHUNK = 64 * 1024
# httpx asks for compressed answers unless told otherwise; clients that read small answers
# on loopback send this, and httpx decodes what comes compressed all the same.
UNCOMPRESSED = {"Accept-Encoding": "identity"}


class AiohttpTransport(httpx.AsyncBaseTransport):
    """One aiohttp session (its keep-alive connections), opened on the first request in the
    running event loop. Certificates are checked against httpx's own trust store.

    Proxies come from the environment, as httpx's do: the proxy variables are read when the
    transport is made, and whether a host is exempt (NO_PROXY) at its first request; both
    are kept. aiohttp's own `trust_env` read them, and the netrc file, again at every
    request, which doubled a call's CPU.
    """

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._proxies = urllib.request.getproxies()
        self._proxy_of: dict[tuple[str, str], str | None] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        session = self._session or self._open()
        headers = request.headers.multi_items()
        try:
            answer = await session.request(
                request.method,
                URL(str(request.url), encoded=True),
                headers=headers,
                data=request.content or None,
                allow_redirects=False,
                timeout=_timeout_of(request),
                proxy=self._proxy_for(request.url),
            )
        except _FAILURES as error:
            raise _as_httpx(error, request) from error
        return httpx.Response(
            answer.status,
            headers=_without_framing(answer.raw_headers),
            stream=_Body(answer, request),
            request=request,
        )

    def _proxy_for(self, url: httpx.URL) -> str | None:
        origin = (url.scheme, url.host)
        if origin not in self._proxy_of:
            bypass = urllib.request.proxy_bypass(url.host)  # NO_PROXY
            self._proxy_of[origin] = None if bypass else self._proxies.get(url.scheme)
        return self._proxy_of[origin]

    def _open(self) -> aiohttp.ClientSession:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                ssl=httpx.create_ssl_context(),
                keepalive_timeout=KEEPALIVE_S,
                enable_cleanup_closed=True,
            ),
            auto_decompress=False,
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding"),
        )
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class _Body(httpx.AsyncByteStream):
    """The answer's body as it arrives; closing it gives the connection back (or drops it,
    when the body was not read to its end)."""

    def __init__(self, answer: aiohttp.ClientResponse, request: httpx.Request) -> None:
        self._answer = answer
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._answer.content.iter_chunked(CHUNK):
                yield chunk
        except _FAILURES as error:
            raise _as_httpx(error, self._request) from error

    async def aclose(self) -> None:
        if self._answer.content.at_eof():
            self._answer.release()  # the connection is kept for the next request
        else:
            self._answer.close()  # what was not read is never read


def _timeout_of(request: httpx.Request) -> aiohttp.ClientTimeout:
    limits = request.extensions.get("timeout", {})
    return aiohttp.ClientTimeout(sock_connect=limits.get("connect"), sock_read=limits.get("read"))


_FAILURES = (TimeoutError, aiohttp.ClientError, OSError)


def _as_httpx(error: Exception, request: httpx.Request) -> httpx.TransportError:
    """An aiohttp failure as the httpx error a caller of httpx expects."""
    if isinstance(error, TimeoutError):
        return httpx.ReadTimeout(f"no answer in time: {error!r}", request=request)
    return httpx.NetworkError(f"no answer: {error!r}", request=request)


def _without_framing(
    headers: tuple[tuple[bytes, bytes], ...],
) -> list[tuple[bytes, bytes]]:
    """The answer's headers less how it was framed: the body is handed over as data."""
    return [(k, v) for k, v in headers if k.lower() != b"transfer-encoding"]
