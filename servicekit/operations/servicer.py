"""The OperationsService servicer: one implementation for every service, parameterised by
the service's name, its sessions, its eventing tables and its hooks.

A decision (a replay, a resolution) and its audit row are written in one transaction, so
neither is ever found without the other. A failed outbox row is an open incident
(`failed_rows`): raised when incidents or a booking are read, resolved by its replay.
Refusals reach the caller as their rich status in the error domain `liftfit.ops` (see
`OperatorApi.error_domains`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import grpc
from liftfit.ops.v1 import operations_pb2 as pb
from liftfit.ops.v1 import operations_pb2_grpc
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.audit import AuditLog
from servicekit.callers import speakers_for_users, vouched
from servicekit.grpc_server import Registration
from servicekit.incidents import Incidents
from servicekit.operations import effects, failed_rows, requests
from servicekit.operations.hooks import (
    FINDING_STATES,
    BookingLookup,
    DriftSource,
    StateSource,
    no_states,
)
from servicekit.operations.messages import (
    audit_message,
    backlog_message,
    booking_state_message,
    effect_message,
    finding_message,
    incident_message,
    outbox_message,
)
from servicekit.outbox import Outbox, UnknownEffect
from servicekit.refusals import NotFound
from servicekit.schema import EventingTables

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["OperationsService"].full_name
ERROR_DOMAIN = "liftfit.ops"
REPLAY_EFFECT, RESOLVE_INCIDENT = "replay_effect", "resolve_incident"  # audit actions
Context = grpc.aio.ServicerContext[Any, Any]


class OperationsServicer(operations_pb2_grpc.OperationsServiceServicer):
    def __init__(
        self,
        service: str,
        sessions: async_sessionmaker[AsyncSession],
        tables: EventingTables,
        lookup: BookingLookup,
        drift: DriftSource,
        states: StateSource = no_states,
    ) -> None:
        self._service = service
        self._sessions = sessions
        self._tables = tables
        self._lookup = lookup
        self._drift = drift
        self._states = states
        self._outbox = Outbox(tables.outbox, producer=service)
        self._incidents = Incidents(tables.incidents)
        self._audit = AuditLog(tables.audit_log)
        self._speakers = speakers_for_users()

    async def DescribeBooking(
        self, request: pb.DescribeBookingRequest, context: Context
    ) -> pb.BookingSide:
        booking_id = requests.identifier("booking_id", request.booking_id)
        async with self._sessions() as session, session.begin():
            await failed_rows.raise_incidents(session, self._tables, self._service)
            found = await self._lookup(session, booking_id)
            subjects = list(dict.fromkeys([booking_id, *found.subjects]))
            pending = await effects.pending_effects(session, self._tables, subjects)
            failed = await effects.failed_effects(session, self._tables, subjects)
            incidents = await effects.open_incidents(session, self._tables, subjects)
            trace_id = found.trace_id or await effects.trace_id_of(session, self._tables, subjects)
        return pb.BookingSide(
            service=self._service,
            booking_id=booking_id,
            known=found.known,
            state=found.state,
            facts=dict(found.facts),
            pending_effects=[effect_message(e) for e in pending],
            failed_effects=[effect_message(e) for e in failed],
            open_incidents=[incident_message(self._service, i) for i in incidents],
            trace_id=trace_id,
            subjects=subjects,
        )

    async def ListOutbox(
        self, request: pb.ListOutboxRequest, context: Context
    ) -> pb.ListOutboxResponse:
        state = requests.state_filter(request.state, requests.OUTBOX_STATES)
        limit = requests.limit(request.limit)
        async with self._sessions() as session, session.begin():
            rows = await self._outbox.rows(session, state or None, limit)
        return pb.ListOutboxResponse(rows=[outbox_message(row) for row in rows])

    async def ReplayEffect(
        self, request: pb.ReplayEffectRequest, context: Context
    ) -> pb.ReplayEffectResponse:
        command = requests.ReplayEffect(request.effect_id, request.operator, request.reason)
        operator = vouched(context, command.operator, self._speakers)
        async with self._sessions() as session, session.begin():
            try:
                generation = await self._outbox.replay(session, uuid.UUID(command.effect_id))
            except UnknownEffect:
                raise NotFound("no outbox row has that effect_id") from None
            effect_id = uuid.UUID(command.effect_id)
            await failed_rows.resolve_replayed(
                session, self._tables, effect_id, operator, command.reason
            )
            detail = {"reason": command.reason, "dispatch_generation": generation}
            await self._audit.within(session).record(
                operator, REPLAY_EFFECT, command.effect_id, detail
            )
        return pb.ReplayEffectResponse(effect_id=command.effect_id, dispatch_generation=generation)

    async def ListIncidents(
        self, request: pb.ListIncidentsRequest, context: Context
    ) -> pb.ListIncidentsResponse:
        state = requests.state_filter(request.state, requests.INCIDENT_STATES)
        async with self._sessions() as session, session.begin():
            await failed_rows.raise_incidents(session, self._tables, self._service)
            found = await self._incidents.listed(session, state or None)
        return pb.ListIncidentsResponse(
            incidents=[incident_message(self._service, i) for i in found]
        )

    async def ResolveIncident(
        self, request: pb.ResolveIncidentRequest, context: Context
    ) -> pb.Incident:
        command = requests.ResolveIncident(
            request.incident_id, request.operator, request.decision, request.note
        )
        operator = vouched(context, command.operator, self._speakers)
        async with self._sessions() as session, session.begin():
            resolution = await self._incidents.resolve_one(
                session,
                uuid.UUID(command.incident_id),
                operator,
                command.decision,
                command.note,
            )
            if resolution is None:
                raise NotFound("no incident has that incident_id")
            if resolution.newly:
                incident = resolution.incident
                detail = {
                    "decision": command.decision,
                    "note": command.note,
                    "kind": incident.kind,
                    "subject_id": incident.subject_id,
                }
                await self._audit.within(session).record(
                    operator, RESOLVE_INCIDENT, command.incident_id, detail
                )
        return incident_message(self._service, resolution.incident)

    async def ListDriftFindings(
        self, request: pb.ListDriftFindingsRequest, context: Context
    ) -> pb.ListDriftFindingsResponse:
        state = requests.state_filter(request.state, FINDING_STATES)
        async with self._sessions() as session, session.begin():
            found = await self._drift(session, state or None)
        return pb.ListDriftFindingsResponse(
            findings=[finding_message(self._service, f) for f in found]
        )

    async def GetBacklog(self, request: pb.GetBacklogRequest, context: Context) -> pb.Backlog:
        async with self._sessions() as session, session.begin():
            return backlog_message(await self._outbox.backlog(session))

    async def ListAudit(
        self, request: pb.ListAuditRequest, context: Context
    ) -> pb.ListAuditResponse:
        subject = requests.audit_subject(request.subject)
        limit = requests.limit(request.limit)
        async with self._sessions() as session, session.begin():
            entries = await self._audit.within(session).newest(subject or None, limit)
        return pb.ListAuditResponse(entries=[audit_message(entry) for entry in entries])

    async def ListBookingStates(
        self, request: pb.ListBookingStatesRequest, context: Context
    ) -> pb.ListBookingStatesResponse:
        before = request.before if request.HasField("before") else None
        query = requests.state_query(request.booking_ids, request.state, before, request.limit)
        async with self._sessions() as session, session.begin():
            found = await self._states(session, query)
        return pb.ListBookingStatesResponse(bookings=[booking_state_message(b) for b in found])


@dataclass(frozen=True)
class OperatorApi:
    """What a service's bootstrap adds to its runtime to serve the operators' view."""

    servicer: OperationsServicer
    service_name: str = SERVICE_NAME

    @property
    def registration(self) -> Registration:
        def register(server: grpc.aio.Server) -> None:
            operations_pb2_grpc.add_OperationsServiceServicer_to_server(self.servicer, server)

        return register

    @property
    def error_domains(self) -> Mapping[str, str]:
        """The error domain of this service's refusals, by its gRPC service name."""
        return {self.service_name: ERROR_DOMAIN}


def operator_api(
    service: str,
    sessions: async_sessionmaker[AsyncSession],
    tables: EventingTables,
    lookup: BookingLookup,
    drift: DriftSource,
    states: StateSource = no_states,
) -> OperatorApi:
    return OperatorApi(OperationsServicer(service, sessions, tables, lookup, drift, states))
