"""What operators set up: studios and their slots, organisations and members, plans."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from liftfit.booking.v1 import booking_pb2 as bpb
from liftfit.booking.v1 import events_pb2 as bev
from liftfit.payment.v1 import events_pb2 as pev
from liftfit.payment.v1 import payment_pb2 as ppb

from gateway_bff import bodies, resources
from gateway_bff.docs import ANSWERS, answer
from gateway_bff.edge import caller_of
from gateway_bff.parts import known_id, parts_of
from gateway_bff.problems import not_found
from gateway_bff.store.directory import NewMember, Org, UnknownOrg
from gateway_bff.times import rfc3339
from servicekit.protobuf import timestamp

router = APIRouter(prefix="/v1/ops", tags=["operations"])
_SPACE = {"space_id": "$response.body#/space_id"}
_ORG = {"org_id": "$response.body#/org_id"}


@router.post(
    "/spaces",
    status_code=201,
    response_model=resources.Space,
    responses={
        **ANSWERS.operator(),
        **answer(
            201,
            "The studio",
            CreateSlots=("createSlots", _SPACE),
            ListSlots=("listSlots", _SPACE),
        ),
    },
    operation_id="createSpace",
)
async def create_space(body: bodies.NewSpace, request: Request) -> JSONResponse:
    services = parts_of(request).services
    new = bpb.CreateSpaceRequest(name=body.name, timezone=body.timezone)
    space = await services["booking"].write(services.booking.CreateSpace, new, _who(request))
    return JSONResponse(resources.space(space), status_code=201)


@router.post(
    "/spaces/{space_id}/slots",
    status_code=201,
    response_model=list[resources.Slot],
    responses=ANSWERS.operator(404, 409),
    operation_id="createSlots",
)
async def create_slots(space_id: str, body: bodies.NewSlots, request: Request) -> JSONResponse:
    services = parts_of(request).services
    new = bpb.CreateSlotsRequest(
        space_id=known_id(space_id, "space"),
        slots=[
            bpb.NewSlot(
                starts_at=timestamp(slot.starts_at),
                ends_at=timestamp(slot.ends_at),
                price=bev.Money(amount=slot.price.amount, currency=slot.price.currency),
            )
            for slot in body.slots
        ],
    )
    created = await services["booking"].write(services.booking.CreateSlots, new, _who(request))
    return JSONResponse([resources.slot(s) for s in created.slots], status_code=201)


@router.post(
    "/slots/{slot_id}/close",
    response_model=resources.Slot,
    responses=ANSWERS.operator(404, 409),
    operation_id="closeSlot",
)
async def close_slot(slot_id: str, request: Request) -> JSONResponse:
    """No one can book the slot any more; one with a booking must be cancelled first (409)."""
    services = parts_of(request).services
    ask = bpb.CloseSlotRequest(slot_id=known_id(slot_id, "slot"))
    closed = await services["booking"].write(services.booking.CloseSlot, ask, _who(request))
    await parts_of(request).directory.record(_who(request), "close_slot", slot_id, {})
    return JSONResponse(resources.slot(closed))


@router.post(
    "/slots/{slot_id}/price",
    response_model=resources.Slot,
    responses=ANSWERS.operator(404),
    operation_id="setSlotPrice",
)
async def set_slot_price(slot_id: str, body: bodies.NewPrice, request: Request) -> JSONResponse:
    """The price the slot is sold at from now on; bookings keep the price they were sold at."""
    services = parts_of(request).services
    price = bev.Money(amount=body.price.amount, currency=body.price.currency)
    ask = bpb.SetSlotPriceRequest(slot_id=known_id(slot_id, "slot"), price=price)
    priced = await services["booking"].write(services.booking.SetSlotPrice, ask, _who(request))
    detail = {"price": body.price.model_dump()}
    await parts_of(request).directory.record(_who(request), "set_slot_price", slot_id, detail)
    return JSONResponse(resources.slot(priced))


@router.get(
    "/orgs",
    response_model=list[resources.OrgWithMembers],
    responses=ANSWERS.operator(),
    operation_id="listOrgs",
)
async def list_orgs(
    request: Request, limit: Annotated[int, Query(ge=1, le=1000)] = 200
) -> JSONResponse:
    """The newest organisations first, each with its members."""
    listed = await parts_of(request).directory.orgs(limit)
    return JSONResponse(
        [
            {**_org(org), "members": [resources.member(m) for m in members]}
            for org, members in listed
        ]
    )


@router.post(
    "/orgs",
    status_code=201,
    response_model=resources.Org,
    responses={
        **ANSWERS.operator(),
        **answer(
            201,
            "The organisation",
            # The operator who made it can make themselves its owner, and then act in it.
            AddMember=(
                "addMember",
                {"org_id": "$response.body#/org_id"},
                {"user": "$request.header.X-Dev-User", "role": "owner"},
            ),
        ),
    },
    operation_id="createOrg",
)
async def create_org(body: bodies.NewOrg, request: Request) -> JSONResponse:
    org = await parts_of(request).directory.create_org(body.name, _who(request))
    return JSONResponse(_org(org), status_code=201)


@router.post(
    "/orgs/{org_id}/members",
    status_code=201,
    response_model=resources.Member,
    responses={
        **ANSWERS.operator(404),
        **answer(
            201,
            "The member",
            ListBookings=("listBookings", _ORG),
            CreateBooking=("createBooking", _ORG),
            CreateOrder=("createOrder", _ORG),
            GetPasses=("getPasses", _ORG),
        ),
    },
    operation_id="addMember",
)
async def add_member(org_id: str, body: bodies.NewMember, request: Request) -> JSONResponse:
    new = NewMember(known_id(org_id, "organisation"), body.user, body.role, body.email, body.locale)
    try:
        member = await parts_of(request).directory.put_member(new, _who(request))
    except UnknownOrg:
        raise not_found("no such organisation") from None
    return JSONResponse(resources.member(member), status_code=201)


@router.post(
    "/plans",
    status_code=201,
    response_model=resources.Plan,
    responses=ANSWERS.operator(409),
    operation_id="createPlan",
)
async def create_plan(body: bodies.NewPlan, request: Request) -> JSONResponse:
    services = parts_of(request).services
    plan = ppb.Plan(
        plan_code=body.plan_code,
        plan_version=body.plan_version,
        kind=body.kind,  # each kind's ranges are its own (bodies.PassPlan, SubscriptionPlan)
        name=body.name,
        price=pev.Money(amount=body.price.amount, currency=body.price.currency),
        entries=body.entries,
        period_days=body.period_days,
    )
    created = await services["payment"].write(
        services.payment.CreatePlan, ppb.CreatePlanRequest(plan=plan), _who(request)
    )
    return JSONResponse(resources.plan(created), status_code=201)


def _org(org: Org) -> dict[str, str]:
    return {"org_id": org.org_id, "name": org.name, "created_at": rfc3339(org.created_at)}


def _who(request: Request) -> str:
    return caller_of(request).user
