"""A member's orders of passes and subscriptions, and the organisation's pass balance.

The price comes from the payment service's catalogue, never from the client; keys work as
for bookings (gateway_bff.routes.bookings), owned by the payment service.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from liftfit.booking.v1 import booking_pb2 as bpb
from liftfit.payment.v1 import events_pb2 as pev
from liftfit.payment.v1 import payment_pb2 as ppb

from gateway_bff import bodies, resources
from gateway_bff.docs import ANSWERS, answer
from gateway_bff.parts import idempotency_key, known_id, parts_of, replay_headers
from gateway_bff.routes.bookings import member_of

router = APIRouter(prefix="/v1/orgs/{org_id}", tags=["orders"])
Key = Annotated[str, Depends(idempotency_key)]
_ORDER = {"org_id": "$request.path.org_id", "order_id": "$response.body#/order_id"}


@router.post(
    "/orders",
    status_code=201,
    response_model=resources.Order,
    responses={
        **ANSWERS.member_write(),
        **answer(201, "The order", GetOrder=("getOrder", _ORDER)),
    },
    operation_id="createOrder",
)
async def create_order(
    org_id: str, body: bodies.NewOrder, key: Key, request: Request
) -> JSONResponse:
    parts, member = parts_of(request), member_of(request)
    order = ppb.CreateOrderRequest(
        org_id=org_id,
        user=member.user,
        idempotency_key=key,
        plan_code=body.plan_code,
        plan_version=body.plan_version,
        contact=pev.Contact(email=member.email or "", locale=member.locale),
    )
    services = parts.services
    reply = await services["payment"].write(services.payment.CreateOrder, order, member.user)
    headers = replay_headers(reply.replayed)
    return JSONResponse(resources.order(reply.order), status_code=201, headers=headers)


@router.get(
    "/orders/{order_id}",
    response_model=resources.Order,
    responses=ANSWERS.member_read(),
    operation_id="getOrder",
)
async def get_order(org_id: str, order_id: str, request: Request) -> JSONResponse:
    services = parts_of(request).services
    ask = ppb.GetOrderRequest(org_id=org_id, order_id=known_id(order_id, "order"))
    return JSONResponse(
        resources.order(await services["payment"].read(services.payment.GetOrder, ask))
    )


@router.get(
    "/passes",
    response_model=resources.Passes,
    responses=ANSWERS.member_read(),
    operation_id="getPasses",
)
async def get_passes(org_id: str, request: Request) -> JSONResponse:
    services = parts_of(request).services
    ask = bpb.GetPassBalanceRequest(org_id=org_id)
    balance = await services["booking"].read(services.booking.GetPassBalance, ask)
    return JSONResponse(resources.passes(balance))
