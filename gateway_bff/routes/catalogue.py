"""What anyone may read: the studios, their slots, and the plans on sale."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from liftfit.booking.v1 import booking_pb2 as bpb
from liftfit.payment.v1 import payment_pb2 as ppb

from gateway_bff import bodies, resources
from gateway_bff.docs import ANSWERS
from gateway_bff.parts import known_id, parts_of
from servicekit.protobuf import timestamp

router = APIRouter(tags=["catalogue"])


@router.get(
    "/v1/spaces",
    response_model=list[resources.Space],
    responses=ANSWERS.read(),
    operation_id="listSpaces",
)
async def list_spaces(request: Request) -> JSONResponse:
    services = parts_of(request).services
    reply = await services["booking"].read(services.booking.ListSpaces, bpb.ListSpacesRequest())
    return JSONResponse([resources.space(s) for s in reply.spaces])


@router.get(
    "/v1/spaces/{space_id}/slots",
    response_model=list[resources.Slot],
    responses=ANSWERS.read(404, 422),
    operation_id="listSlots",
)
async def list_slots(
    space_id: str,
    request: Request,
    since: Annotated[bodies.UtcTime | None, Query(alias="from")] = None,
    until: Annotated[
        bodies.UtcTime | None, Query(alias="to", description="Not before `from` (else 422)")
    ] = None,
) -> JSONResponse:
    services = parts_of(request).services
    query = bpb.ListSlotsRequest(
        space_id=known_id(space_id, "space"), **{"from": timestamp(since)}, to=timestamp(until)
    )
    reply = await services["booking"].read(services.booking.ListSlots, query)
    return JSONResponse([resources.slot(s) for s in reply.slots])


@router.get(
    "/v1/plans",
    response_model=list[resources.Plan],
    responses=ANSWERS.read(),
    operation_id="listPlans",
)
async def list_plans(request: Request) -> JSONResponse:
    services = parts_of(request).services
    reply = await services["payment"].read(services.payment.ListPlans, ppb.ListPlansRequest())
    return JSONResponse([resources.plan(p) for p in reply.plans])
