"""The AccessService gRPC servicer: requests checked, one unit of work each, replies out.

A refusal raised anywhere below reaches the caller as its rich status through the server's
interceptor (servicekit.errors), the same way in every service. A PIN travels only in a
DisclosePin reply, and only from the transaction that recorded the disclosure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
from liftfit.access.v1 import access_pb2 as pb
from liftfit.access.v1 import access_pb2_grpc

from servicekit import protobuf
from servicekit.commands import identifier, state_filter
from servicekit.protobuf import timestamp
from services.access.adapters.repository import StoredFinding
from services.access.domain.commands import (
    FINDING_STATES,
    INCIDENT_STATES,
    AccessQuery,
    DisclosePin,
)
from services.access.service_layer import handlers
from services.access.service_layer.handlers import AccessView, GrantView
from services.access.service_layer.unit_of_work import UnitOfWorkFactory

Context = grpc.aio.ServicerContext[Any, Any]


def access_message(view: AccessView) -> pb.Access:
    grant = view.grant
    return pb.Access(
        booking_id=grant.booking_id,
        state=grant.state.value,
        valid_from=timestamp(grant.window.valid_from),
        valid_to=timestamp(grant.window.valid_to),
        pin=view.pin,
        grant_id=grant.grant_id,
        slot_id=grant.slot_id,
    )


def grant_message(view: GrantView) -> pb.Grant:
    grant, provision = view.grant, view.provision
    return pb.Grant(
        grant_id=grant.grant_id,
        booking_id=grant.booking_id,
        slot_id=grant.slot_id,
        device_id=grant.device_id,
        state=grant.state.value,
        valid_from=timestamp(grant.window.valid_from),
        valid_to=timestamp(grant.window.valid_to),
        provision_id=grant.provision_id,
        provision_state=provision.state.value if provision else "",
        alias=view.alias,
        provider_code_id=(provision.provider_code_id or "") if provision else "",
        disclosures=view.disclosures,
        failure=grant.failure or "",
        created_at=timestamp(grant.created_at),
        updated_at=timestamp(grant.updated_at),
    )


def finding_message(finding: StoredFinding) -> pb.DriftFinding:
    return pb.DriftFinding(
        finding_id=finding.finding_id,
        kind=finding.kind,
        subject_id=finding.subject_id,
        problem=finding.problem,
        truth=finding.truth,
        repair=finding.repair,
        needs_human=finding.needs_human,
        state=finding.state,
        found_at=timestamp(finding.found_at),
        cleared_at=timestamp(finding.cleared_at),
    )


class AccessServicer(access_pb2_grpc.AccessServiceServicer):
    def __init__(self, uows: UnitOfWorkFactory) -> None:
        self._uows = uows

    async def GetAccess(self, request: pb.GetAccessRequest, context: Context) -> pb.Access:
        query = AccessQuery(request.org_id, request.booking_id)
        # One read, consistent by itself: on the driver, with no ORM session around it.
        async with self._uows.transaction_on_driver() as uow:
            return access_message(await handlers.get_access(uow, query))

    async def DisclosePin(self, request: pb.DisclosePinRequest, context: Context) -> pb.Access:
        command = DisclosePin.of(request.org_id, request.booking_id, request.user, request.purpose)
        async with self._uows.transaction() as uow:
            view = await handlers.disclose_pin(uow, command)
        return access_message(view)  # only once the disclosure is committed

    async def ListGrants(
        self, request: pb.ListGrantsRequest, context: Context
    ) -> pb.ListGrantsResponse:
        booking_id = identifier("booking_id", request.booking_id)
        async with self._uows.transaction() as uow:
            found = await handlers.list_grants(uow, booking_id)
        return pb.ListGrantsResponse(grants=[grant_message(view) for view in found])

    async def ListIncidents(
        self, request: pb.ListIncidentsRequest, context: Context
    ) -> pb.ListIncidentsResponse:
        state = state_filter(request.state, INCIDENT_STATES)
        async with self._uows.transaction() as uow:
            found = await handlers.list_incidents(uow, state)
        return pb.ListIncidentsResponse(
            incidents=[protobuf.incident(pb.Incident, i) for i in found]
        )

    async def ListDriftFindings(
        self, request: pb.ListDriftFindingsRequest, context: Context
    ) -> pb.ListDriftFindingsResponse:
        state = state_filter(request.state, FINDING_STATES)
        async with self._uows.transaction() as uow:
            found = await handlers.list_findings(uow, state)
        return pb.ListDriftFindingsResponse(findings=[finding_message(f) for f in found])


def registration(servicer: AccessServicer) -> Callable[[grpc.aio.Server], None]:
    def register(server: grpc.aio.Server) -> None:
        access_pb2_grpc.add_AccessServiceServicer_to_server(servicer, server)

    return register
