"""A booking's trace for the operators' console, read from Jaeger's query API.

The browser never talks to Jaeger (the pages load nothing from another origin): the gateway
reads `GET <jaeger>/api/traces/<trace_id>` and answers the spans reduced to what a waterfall
draws. Jaeger's answer is checked like any input from outside: one that does not come, or
does not have the expected shape, is `TracesUnavailable`, never a server error.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from servicekit.provider_http import AnswerTooLarge, bounded_answer

TRACE_ID = re.compile(r"[0-9a-f]{32}")
MAX_SPANS = 5000  # a booking's trace has tens; a bound keeps a huge one from the browser
# What is read of Jaeger's answer at most (a span with its tags is under 2 KiB as Jaeger
# writes it): an answer is input from outside, and memory is the gateway's.
MAX_ANSWER_BYTES = 16 * 1024 * 1024
_ERROR_TAGS = (("error", True), ("otel.status_code", "ERROR"))


class TracesUnavailable(Exception):
    """Jaeger did not answer, or answered something that is not a trace."""


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Reference(_Loose):
    refType: str
    spanID: str


class _Tag(_Loose):
    key: str
    value: Any = None


class _Span(_Loose):  # the field names are Jaeger's
    spanID: str
    operationName: str
    processID: str
    startTime: int
    duration: int
    references: list[_Reference] = []
    tags: list[_Tag] = []


class _Process(_Loose):
    serviceName: str


class _Trace(_Loose):
    spans: list[_Span] = Field(max_length=MAX_SPANS)
    processes: dict[str, _Process]


class _Answer(_Loose):
    data: list[_Trace] = Field(max_length=10)


class Traces:
    """Jaeger's query API at `base_url`; an empty one means none is configured."""

    def __init__(
        self,
        base_url: str,
        timeout_s: float = 3.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        # httpx's time-out bounds each read, not the call: an answer that comes a few
        # bytes at a time would hold the operator's request for as long as it drips.
        self._deadline_s = 2 * timeout_s
        self._http = (
            # Uncompressed, so the bound holds for what is decoded too.
            httpx.AsyncClient(
                base_url=base_url,
                timeout=timeout_s,
                transport=transport,
                headers={"Accept-Encoding": "identity"},
            )
            if base_url
            else None
        )

    async def spans(self, trace_id: str) -> list[dict[str, Any]] | None:
        """The trace's spans, earliest first; None when Jaeger has no such trace."""
        if self._http is None:
            raise TracesUnavailable("no trace store is configured")
        request = self._http.build_request("GET", f"/api/traces/{trace_id}")
        try:
            async with asyncio.timeout(self._deadline_s):
                status, body = await bounded_answer(self._http, request, MAX_ANSWER_BYTES)
        except TimeoutError:
            raise TracesUnavailable(f"Jaeger took over {self._deadline_s:g} s") from None
        except httpx.HTTPError as error:
            raise TracesUnavailable(f"Jaeger did not answer: {type(error).__name__}") from None
        except AnswerTooLarge as error:
            raise TracesUnavailable(f"Jaeger's {error}") from None
        if status == 404:
            return None
        if status != 200:
            raise TracesUnavailable(f"Jaeger answered {status}")
        try:
            traces = _Answer.model_validate_json(body).data
        except ValidationError:
            raise TracesUnavailable("Jaeger's answer is not a trace") from None
        found = [reduced(trace, span) for trace in traces for span in trace.spans]
        return sorted(found, key=lambda span: (span["start_us"], span["span_id"]))[:MAX_SPANS]

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()


def reduced(trace: _Trace, span: _Span) -> dict[str, Any]:
    parents = [r.spanID for r in span.references if r.refType == "CHILD_OF"]
    process = trace.processes.get(span.processID)
    return {
        "span_id": span.spanID,
        "parent_id": parents[0] if parents else None,
        "service": process.serviceName if process else "",
        "name": span.operationName,
        "start_us": span.startTime,
        "duration_us": span.duration,
        "error": any((tag.key, tag.value) in _ERROR_TAGS for tag in span.tags),
    }
