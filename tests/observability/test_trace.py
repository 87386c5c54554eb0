"""One booking is one trace in Jaeger: made through the gateway, paid on the card sandbox,
confirmed, activated and mailed, on the platform as `make up` starts it. Jaeger's query API
returns the trace the operators' timeline names, with spans from the gateway and all four
services, Kafka's produce and consume spans between them, every parent in the trace and
no span starting before its parent."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from opentelemetry.instrumentation.utils import suppress_instrumentation

from tests.gateway.api import OPS, Api
from tests.observability.journey import booked_paid_and_active
from tests.support.platform import Platform
from tests.support.waiting import eventually

WAIT_S = 60
SERVICES = {"gateway", "booking", "payment", "access", "notify"}
# Who hands whom an event on a card booking's way: the checkout asks for a payment, the
# payment confirms the booking, the confirmation plans the access and a mail, the
# activated access sends the PIN's mail.
HANDOVERS = {
    ("booking", "payment"),
    ("payment", "booking"),
    ("booking", "access"),
    ("booking", "notify"),
    ("access", "notify"),
}


@dataclass(frozen=True)
class Span:
    span_id: str
    parent_id: str | None
    service: str
    name: str
    kind: str
    start_us: int


def _spans(trace: dict[str, Any]) -> list[Span]:
    services = {key: p["serviceName"] for key, p in trace["processes"].items()}
    spans = []
    for raw in trace["spans"]:
        parents = [r["spanID"] for r in raw.get("references", []) if r["refType"] == "CHILD_OF"]
        tags = {t["key"]: t["value"] for t in raw.get("tags", [])}
        spans.append(
            Span(
                raw["spanID"],
                parents[0] if parents else None,
                services[raw["processID"]],
                raw["operationName"],
                str(tags.get("span.kind", "internal")),
                int(raw["startTime"]),
            )
        )
    return spans


def _gaps(spans: list[Span]) -> list[str]:
    """What keeps the trace from being whole: a service or a handover not there yet, a
    span whose parent has not arrived."""
    by_id = {s.span_id: s for s in spans}
    gaps = [f"no span of {name}" for name in SERVICES - {s.service for s in spans}]
    gaps += [f"{s.service} {s.name}: parent missing" for s in spans if _orphan(s, by_id)]
    gaps += [f"no handover {a} -> {b}" for a, b in HANDOVERS - _handovers(spans, by_id)]
    return gaps


def _orphan(span: Span, by_id: dict[str, Span]) -> bool:
    return span.parent_id is not None and span.parent_id not in by_id


def _handovers(spans: list[Span], by_id: dict[str, Span]) -> set[tuple[str, str]]:
    """(producing service, consuming service) of every consume span whose parent arrived."""
    return {
        (by_id[s.parent_id].service, s.service)
        for s in spans
        if s.kind == "consumer" and s.parent_id in by_id
    }


@contextmanager
def _untraced() -> Iterator[None]:
    """The test's own calls carry no trace context: were this process tracing (another test
    configured it), the gateway would continue a trace whose root Jaeger never sees."""
    with suppress_instrumentation():
        yield


async def _mails_to(platform: Platform, email: str, count: int) -> None:
    async with httpx.AsyncClient(base_url=platform.url("MAIL_SANDBOX_HTTP_PORT")) as mail:

        async def arrived() -> bool:
            found = (await mail.get("/messages", params={"to": email})).json()["data"]
            return len(found) >= count

        await eventually(arrived, WAIT_S)


async def _whole_trace(platform: Platform, trace_id: str) -> list[Span]:
    """The trace once Jaeger has every part of it (spans arrive in batches, children often
    before their parents); fails naming the gaps if it never does."""
    last: list[str] = ["nothing fetched"]
    async with httpx.AsyncClient(base_url=platform.jaeger, timeout=5) as jaeger:

        async def whole() -> list[Span] | None:
            answer = await jaeger.get(f"/api/traces/{trace_id}")
            if answer.status_code != 200:
                last[:] = [f"Jaeger answered {answer.status_code}"]
                return None
            traces = answer.json()["data"]
            assert len(traces) == 1, [t["traceID"] for t in traces]
            spans = _spans(traces[0])
            last[:] = _gaps(spans)
            return None if last else spans

        try:
            return await eventually(whole, WAIT_S, every=0.5)
        except AssertionError:
            raise AssertionError(f"trace {trace_id} not whole in Jaeger: {last}") from None


async def _each_handover_published(platform: Platform, spans: list[Span]) -> None:
    """Each record consumed in the trace went out in a relay's batch: a publish span of the
    producing service (a trace of its own) links to the span the consumer continued."""
    by_id = {s.span_id: s for s in spans}
    continued = {s.parent_id for s in spans if s.kind == "consumer" and s.parent_id in by_id}
    prefix = platform.env["TOPIC_PREFIX"]
    since = min(s.start_us for s in spans)  # the batches came after the booking's start
    async with httpx.AsyncClient(base_url=platform.jaeger, timeout=5) as jaeger:

        async def linked() -> set[str]:
            found: set[str] = set()
            for service in ("booking", "payment", "access"):
                operation = f"{prefix}{service}.events publish"
                query = {"service": service, "operation": operation, "start": since, "limit": 500}
                answer = await jaeger.get("/api/traces", params=query)
                for trace in answer.json().get("data") or ():
                    for raw in trace["spans"]:
                        found |= {r["spanID"] for r in raw.get("references", [])}
            return found

        async def all_linked() -> set[str] | None:
            found = await linked()
            return found if continued <= found else None

        await eventually(all_linked, WAIT_S, every=0.5)


async def test_a_booking_made_paid_activated_and_mailed_is_one_trace_in_jaeger(
    platform: Platform,
) -> None:
    with _untraced():
        async with Api.at(platform.gateway) as api:
            studio = await api.studio(1)
            email = f"traced-{uuid.uuid4().hex[:8]}@example.test"
            org = await api.org(f"member-{uuid.uuid4().hex[:6]}", email=email)
            booking_id = (await booked_paid_and_active(api, org, studio.slot(0)))["booking_id"]
            await _mails_to(platform, email, 2)  # the confirmation and the PIN
            told = await api.call("GET", f"/v1/ops/bookings/{booking_id}/timeline", OPS)
        assert told.status_code == 200, told.text
        timeline = told.json()
        assert timeline["one_trace"] is True and timeline["trace_id"], timeline
        spans = await _whole_trace(platform, timeline["trace_id"])

    by_id = {s.span_id: s for s in spans}
    [root] = [s for s in spans if s.parent_id is None]
    assert (root.service, root.kind, root.name) == (
        "gateway",
        "server",
        "POST /v1/orgs/{org_id}/bookings",
    )
    for span in spans:
        if span.parent_id is None:
            continue
        parent = by_id[span.parent_id]
        assert span.start_us >= parent.start_us, (span, parent)
        if span.kind == "consumer":  # a record's consumer continues the change that wrote it
            assert parent.service != span.service, (span, parent)
    await _each_handover_published(platform, spans)
