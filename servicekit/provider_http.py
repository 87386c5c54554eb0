"""Calling a provider's JSON API over HTTP, trusting none of its answers.

Every provider adapter (the card gateway, the lock provider) splits what a call can end
in by what the caller may conclude: a definite answer (a 2xx or 4xx with a JSON object),
or an unknown outcome (`UnknownOutcome`: a timeout, a dropped connection, a 5xx, or an
answer that is too large, not JSON, or not an object), after which the request may or may
not have been applied. A whole call is bounded by twice the client's read time-out, so an
answer trickled byte by byte cannot hold a job either, and at most `MAX_ANSWER` bytes are
read. An unreachable provider is logged when it starts and ends (`OutageLog`), not once
per call. Every call is counted by provider, operation and outcome (ok, refused: a 4xx,
unknown) and timed (servicekit.metrics.counters). Each adapter reads the fields it needs
from the document and treats a missing or mistyped one as an unknown outcome too.
"""

from __future__ import annotations

import asyncio
import json as jsonlib
import logging
import time
from typing import Any, Final

import httpx

from servicekit.http_client_spans import TracedTransport
from servicekit.http_transport import UNCOMPRESSED, AiohttpTransport
from servicekit.metrics import counters
from servicekit.outage import OutageLog

# Bounds on what is read from a provider: its answers are small, and a broken or hostile
# one must not cost memory.
MAX_ANSWER: Final = 256 * 1024

log = logging.getLogger(__name__)


class UnknownOutcome(Exception):
    """No definite answer: the request may or may not have been applied."""


class JsonExchange:
    """One provider's HTTP client, answering each call with a status and a JSON object."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        provider: str,
        unknown: type[UnknownOutcome] = UnknownOutcome,
        metric_name: str = "provider",
    ) -> None:
        self.client = client
        self._metric_name = metric_name  # the `provider` label: card_gateway, lock_provider
        self._unknown = unknown
        self._deadline_s = 2 * (client.timeout.read or 30.0)
        self._outage = OutageLog(log, provider)

    async def call(
        self,
        method: str,
        path: str,
        json: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        *,
        operation: str,
    ) -> tuple[int, dict[str, Any]]:
        """The status (2xx or 4xx) and the JSON object of a definite answer. `operation`
        names the call in the metrics (a fixed word: a path holds ids)."""
        call = f"{method} {path}"
        request = self.client.build_request(
            method, path, json=json, params=params, headers=headers or {}
        )
        started, outcome = time.perf_counter(), counters.UNKNOWN
        try:
            answer = await self._exchange(call, request)
            outcome = counters.OK if answer[0] < 300 else counters.REFUSED
        except UnknownOutcome as error:
            self._outage.failed(error)
            raise
        finally:
            elapsed = time.perf_counter() - started
            counters.provider_call(self._metric_name, operation, outcome, elapsed)
        self._outage.succeeded()
        return answer

    async def aclose(self) -> None:
        await self.client.aclose()

    async def _exchange(self, call: str, request: httpx.Request) -> tuple[int, dict[str, Any]]:
        try:
            async with asyncio.timeout(self._deadline_s):
                status, body = await self._send(request)
        except (httpx.TransportError, TimeoutError) as error:  # the outcome is unknown
            raise self._unknown(f"{call}: {type(error).__name__}") from error
        if not (200 <= status < 300 or 400 <= status < 500):
            raise self._unknown(f"{call}: {status}")
        return status, self._document(body, call)

    async def _send(self, request: httpx.Request) -> tuple[int, bytes]:
        try:
            return await bounded_answer(self.client, request, MAX_ANSWER)
        except AnswerTooLarge as error:
            raise self._unknown(f"{request.method}: {error}") from None

    def _document(self, body: bytes, call: str) -> dict[str, Any]:
        try:
            data = jsonlib.loads(body)
        except (ValueError, RecursionError):  # not JSON, undecodable, or nested beyond reason
            raise self._unknown(f"{call}: the answer is not JSON") from None
        if not isinstance(data, dict):
            raise self._unknown(f"{call}: the answer is not a JSON object")
        return data


class AnswerTooLarge(Exception):
    """An answer longer than the reader's bound; the rest of it was never read."""


async def bounded_answer(
    client: httpx.AsyncClient, request: httpx.Request, max_bytes: int
) -> tuple[int, bytes]:
    """The status and the body of an answer, read no further than `max_bytes`."""
    response = await client.send(request, stream=True)
    try:
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > max_bytes:
                raise AnswerTooLarge(f"answer over {max_bytes} bytes")
        return response.status_code, bytes(body)
    finally:
        await response.aclose()


def make_client(base_url: str, api_key: str, timeout_s: float) -> httpx.AsyncClient:
    """A provider's client with a bearer key. Explicit time-outs: a hanging provider must
    end in an unknown outcome, never a stuck worker. Uncompressed answers: the size bound
    then holds for what is decoded as well.

    Its connections are aiohttp's (servicekit.http_transport): httpx's own cost a call
    about twice the client's CPU (docs/performance.md, "The providers' connections"). Each
    call's span is servicekit.http_client_spans'."""
    return httpx.AsyncClient(
        base_url=base_url,
        headers={"Authorization": f"Bearer {api_key}", **UNCOMPRESSED},
        timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 2.0)),
        transport=TracedTransport(AiohttpTransport()),
    )
