"""What operators set up: studios and their slots, organisations and members, plans."""

from __future__ import annotations

from fastapi import APIRouter, Request
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
from gateway_bff.resources import rfc3339
from gateway_bff.store.directory import NewMember, UnknownOrg
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
    responses=ANSWERS.operator(404),
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
    shown = {"org_id": org.org_id, "name": org.name, "created_at": rfc3339(org.created_at)}
    return JSONResponse(shown, status_code=201)


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
        kind=body.kind,
        name=body.name,
        price=pev.Money(amount=body.price.amount, currency=body.price.currency),
        entries=body.entries,
        period_days=body.period_days,
    )
    created = await services["payment"].write(
        services.payment.CreatePlan, ppb.CreatePlanRequest(plan=plan), _who(request)
    )
    return JSONResponse(resources.plan(created), status_code=201)


def _who(request: Request) -> str:
    return caller_of(request).user
