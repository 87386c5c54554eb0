"""What operators watch and decide, gathered from every service's OperationsService.

Each service answers for itself (servicekit.operations): a booking as it sees it, its
outbox, incidents, drift findings and audit log. The gateway asks all four side by side and
puts the answers together; a service that does not answer is named in `unavailable` rather
than failing the whole view, since an operator at night needs what can be seen. Deciding
(a replay, a resolution) is the owning service's, which writes its audit row in the same
transaction as the decision.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from liftfit.ops.v1 import operations_pb2 as opb

from gateway_bff import bodies, drift, resources, timeline
from gateway_bff.docs import ANSWERS
from gateway_bff.edge import caller_of
from gateway_bff.parts import Parts, known_id, parts_of
from gateway_bff.problems import Problem, not_found, service_unavailable
from gateway_bff.resources import moment
from gateway_bff.settings import SERVICES
from gateway_bff.traces import TRACE_ID, TracesUnavailable
from servicekit.lag import BrokerUnreachable

router = APIRouter(prefix="/v1/ops", tags=["operations"])
Service = Literal["booking", "payment", "access", "notify"]


def shown(message: Message) -> dict[str, Any]:
    return MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


async def from_each(
    parts: Parts, ask: Callable[[str], Awaitable[Any]], services: tuple[str, ...] = SERVICES
) -> tuple[dict[str, Any], list[str]]:
    """Every service's answer, side by side; those that did not answer, by name."""
    answers = await asyncio.gather(*(ask(name) for name in services), return_exceptions=True)
    found: dict[str, Any] = {}
    unavailable: list[str] = []
    for name, answer in zip(services, answers, strict=True):
        if isinstance(answer, Problem):
            unavailable.append(name)
        elif isinstance(answer, BaseException):
            raise answer
        else:
            found[name] = answer
    return found, unavailable


async def ask_each(
    parts: Parts, rpc: str, request: Message, services: tuple[str, ...] = SERVICES
) -> tuple[dict[str, Any], list[str]]:
    """One read of the operators' view (`rpc`, an OperationsService method) from each service."""

    async def ask(name: str) -> Any:
        return await parts.services[name].read(getattr(parts.services.ops[name], rpc), request)

    return await from_each(parts, ask, services)


@router.get(
    "/bookings/{booking_id}/timeline",
    responses=ANSWERS.operator(404),
    operation_id="getTimeline",
)
async def get_timeline(booking_id: str, request: Request) -> JSONResponse:
    parts = parts_of(request)
    ask = opb.DescribeBookingRequest(booking_id=known_id(booking_id, "booking"))
    sides, unavailable = await ask_each(parts, "DescribeBooking", ask)
    if not any(s.known for s in sides.values()):
        if unavailable:
            raise Problem(
                503,
                "service_unavailable",
                "Services did not answer",
                "not answering: " + ", ".join(unavailable),
            )
        raise not_found("no service knows this booking")
    shown_sides = {name: shown(s) for name, s in sides.items()}
    return JSONResponse(timeline.told(booking_id, shown_sides, unavailable))


@router.get(
    "/traces/{trace_id}",
    response_model=resources.Trace,
    responses=ANSWERS.operator(404),
    operation_id="getTrace",
)
async def get_trace(trace_id: str, request: Request) -> JSONResponse:
    """A booking's trace (the timeline names its id) as spans for a waterfall, read from
    Jaeger's query API: the console's pages load nothing from another origin."""
    if not TRACE_ID.fullmatch(trace_id) or not trace_id.strip("0"):
        raise not_found("no such trace")
    try:
        spans = await parts_of(request).traces.spans(trace_id)
    except TracesUnavailable as why:
        raise Problem(
            503, "traces_unavailable", "The trace store is unavailable", str(why)
        ) from None
    if spans is None:
        raise not_found("the trace store has no such trace")
    return JSONResponse({"trace_id": trace_id, "spans": spans})


@router.get("/outbox", responses=ANSWERS.operator(), operation_id="listOutbox")
async def list_outbox(
    request: Request,
    service: Annotated[Service | None, Query()] = None,
    state: Annotated[Literal["pending", "dispatched", "failed"] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> JSONResponse:
    parts = parts_of(request)
    ask = opb.ListOutboxRequest(state=state or "", limit=limit)
    chosen = (service,) if service else SERVICES
    answers, unavailable = await ask_each(parts, "ListOutbox", ask, chosen)
    listed = [
        {"service": name, **shown(row)} for name, answer in answers.items() for row in answer.rows
    ]
    listed.sort(key=lambda row: str(row.get("created_at", "")), reverse=True)
    return JSONResponse({"rows": listed, "unavailable": unavailable})


@router.post(
    "/outbox/{service}/{effect_id}/replay",
    status_code=202,
    responses=ANSWERS.operator(404),
    operation_id="replayEffect",
)
async def replay_effect(
    service: str, effect_id: str, request: Request, body: bodies.Replay | None = None
) -> JSONResponse:
    if service not in SERVICES:
        raise not_found("no such service")
    parts = parts_of(request)
    ask = opb.ReplayEffectRequest(
        effect_id=known_id(effect_id, "effect"),
        operator=caller_of(request).user,
        reason=body.reason if body else "",
    )
    replayed = await parts.services[service].write(parts.services.ops[service].ReplayEffect, ask)
    answer = {"service": service, **shown(replayed)}
    return JSONResponse(answer, status_code=202)


@router.get("/incidents", responses=ANSWERS.operator(), operation_id="listIncidents")
async def list_incidents(
    request: Request,
    state: Annotated[Literal["open", "resolved"] | None, Query()] = None,
) -> JSONResponse:
    parts = parts_of(request)
    ask = opb.ListIncidentsRequest(state=state or "")
    answers, unavailable = await ask_each(parts, "ListIncidents", ask)
    listed = [shown(i) for answer in answers.values() for i in answer.incidents]
    listed.sort(key=lambda i: str(i.get("opened_at", "")), reverse=True)
    return JSONResponse({"incidents": listed, "unavailable": unavailable})


@router.post(
    "/incidents/{incident_id}/resolve",
    responses=ANSWERS.operator(404),
    operation_id="resolveIncident",
)
async def resolve_incident(
    incident_id: str, body: bodies.Resolution, request: Request
) -> JSONResponse:
    """Incident ids are unique across services; only the one that holds it resolves it."""
    parts = parts_of(request)
    ask = opb.ResolveIncidentRequest(
        incident_id=known_id(incident_id, "incident"),
        operator=caller_of(request).user,
        decision=body.decision,
        note=body.note,
    )

    async def resolve(name: str) -> opb.Incident | None:
        try:
            found: opb.Incident = await parts.services[name].write(
                parts.services.ops[name].ResolveIncident, ask
            )
        except Problem as problem:
            if problem.code == "not_found":
                return None
            raise
        return found

    answers, unavailable = await from_each(parts, resolve)
    resolved = [answer for answer in answers.values() if answer is not None]
    if resolved:
        return JSONResponse(shown(resolved[0]))
    if unavailable:
        raise Problem(
            503,
            "service_unavailable",
            "Services did not answer",
            "the incident may be at: " + ", ".join(unavailable),
        )
    raise not_found("no such incident")


@router.get("/drift", responses=ANSWERS.operator(), operation_id="listDrift")
async def list_drift(
    request: Request,
    state: Annotated[Literal["repaired", "open", "cleared"] | None, Query()] = None,
) -> JSONResponse:
    """Each service's own findings, and the saga steps that never came, which only two
    services' records show together (gateway_bff.drift): those are live, so `open`."""
    parts = parts_of(request)
    ask = opb.ListDriftFindingsRequest(state=state or "")
    answers, unavailable = await ask_each(parts, "ListDriftFindings", ask)
    found = [f for answer in answers.values() for f in answer.findings]
    if state in (None, "open"):
        joined, not_answering = await drift.cross_findings(_states_of(parts), parts.drift)
        found += joined
        unavailable = [name for name in SERVICES if name in {*unavailable, *not_answering}]
    listed = [shown(f) for f in found]
    listed.sort(key=lambda f: str(f.get("found_at", "")), reverse=True)
    return JSONResponse({"findings": listed, "unavailable": unavailable})


def _states_of(parts: Parts) -> drift.Ask:
    async def ask(
        name: str, request: opb.ListBookingStatesRequest
    ) -> opb.ListBookingStatesResponse:
        reply: opb.ListBookingStatesResponse = await parts.services[name].read(
            parts.services.ops[name].ListBookingStates, request
        )
        return reply

    return ask


@router.get("/audit", responses=ANSWERS.operator(), operation_id="listAudit")
async def list_audit(
    request: Request,
    subject: Annotated[bodies.Subject | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> JSONResponse:
    """Every service's audit log and the gateway's own (organisations, members), newest first."""
    parts = parts_of(request)
    ask = opb.ListAuditRequest(subject=subject or "", limit=limit)
    answers, unavailable = await ask_each(parts, "ListAudit", ask)
    listed = [
        {**shown(e), "audit_id": int(e.audit_id), "service": name}
        for name, answer in answers.items()
        for e in answer.entries
    ]
    listed += [
        {**entry, "service": "gateway"}
        for entry in await parts.directory.audit_entries(limit, subject)
    ]
    listed.sort(key=lambda e: str(e["at"]), reverse=True)
    return JSONResponse({"entries": listed[:limit], "unavailable": unavailable})


@router.get("/lag", responses=ANSWERS.operator(), operation_id="getLag")
async def get_lag(request: Request) -> JSONResponse:
    """Consumer lag per group and partition, read from Kafka's admin API, and each service's
    outbox backlog: how far behind the saga is, on both sides of the broker."""
    parts = parts_of(request)
    backlogs, unavailable = await ask_each(parts, "GetBacklog", opb.GetBacklogRequest())
    try:
        groups = await parts.lag.read()
    except BrokerUnreachable:
        raise service_unavailable("broker", "Kafka did not answer in time") from None
    return JSONResponse(
        {
            "groups": [
                {
                    "group": group.group,
                    "lag": group.lag,
                    "partitions": [asdict(partition) for partition in group.partitions],
                }
                for group in groups
            ],
            "backlog": [
                {
                    "service": name,
                    "pending": int(b.pending),
                    "dispatched": int(b.dispatched),
                    "failed": int(b.failed),
                    "oldest_pending_at": moment(b.oldest_pending_at),
                }
                for name, b in backlogs.items()
            ],
            "unavailable": unavailable,
        }
    )
