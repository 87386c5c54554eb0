"""The PaymentService gRPC servicer: translation only; refusals are mapped by servicekit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
from liftfit.payment.v1 import payment_pb2, payment_pb2_grpc

from servicekit import protobuf
from servicekit.commands import identifier
from servicekit.contacts import Contact
from servicekit.protobuf import timestamp
from services.payment.domain.money import Money
from services.payment.domain.orders import CreateOrder, Plan
from services.payment.domain.payment import Payment
from services.payment.entrypoints import requests
from services.payment.service_layer import handlers
from services.payment.service_layer.announcements import money
from services.payment.service_layer.dependencies import PaymentDeps

Context = grpc.aio.ServicerContext[Any, Any]


def payment_message(payment: Payment) -> payment_pb2.Payment:
    return payment_pb2.Payment(
        payment_id=str(payment.payment_id),
        state=payment.state,
        checkout_url=payment.checkout_url or "",
        amount=money(payment.amount),
        booking_id=payment.booking_id or "",
        order_id=str(payment.order_id) if payment.order_id else "",
        provider_payment_id=payment.provider_payment_id or "",
        created_at=timestamp(payment.created_at),
        updated_at=timestamp(payment.updated_at),
    )


def order_message(view: handlers.OrderView) -> payment_pb2.Order:
    order = view.order
    message = payment_pb2.Order(
        order_id=str(order.order_id),
        org_id=order.org_id,
        state=order.state,
        plan_code=order.plan_code,
        plan_version=order.plan_version,
        price=money(order.price),
        created_at=timestamp(order.created_at),
    )
    if view.payment is not None:
        message.payment.CopyFrom(payment_message(view.payment))
    return message


def plan_message(plan: Plan) -> payment_pb2.Plan:
    return payment_pb2.Plan(
        plan_code=plan.code,
        plan_version=plan.version,
        kind=plan.kind,
        name=plan.name,
        price=money(plan.price),
        entries=plan.entries,
        period_days=plan.period_days,
    )


class PaymentServicer(payment_pb2_grpc.PaymentServiceServicer):
    """Checks each request, calls its use case, answers; a refusal raised anywhere below
    reaches the caller as its rich status through the server's interceptor."""

    def __init__(self, deps: PaymentDeps) -> None:
        self._deps = deps

    async def CreateOrder(
        self, request: payment_pb2.CreateOrderRequest, context: Context
    ) -> payment_pb2.OrderReply:
        command = CreateOrder(
            org_id=request.org_id,
            user=request.user,
            idempotency_key=request.idempotency_key,
            plan_code=request.plan_code,
            plan_version=request.plan_version,
            contact=Contact.checked(request.contact),
        )
        view = await handlers.create_order(self._deps, command)
        return payment_pb2.OrderReply(order=order_message(view), replayed=view.replayed)

    async def GetOrder(
        self, request: payment_pb2.GetOrderRequest, context: Context
    ) -> payment_pb2.Order:
        org_id = identifier("org_id", request.org_id)
        order_id = identifier("order_id", request.order_id)
        return order_message(await handlers.get_order(self._deps, org_id, order_id))

    async def GetPayment(
        self, request: payment_pb2.GetPaymentRequest, context: Context
    ) -> payment_pb2.Payment:
        payment_id = identifier("payment_id", request.payment_id)
        return payment_message(await handlers.get_payment(self._deps, payment_id))

    async def GetPaymentForBooking(
        self, request: payment_pb2.GetPaymentForBookingRequest, context: Context
    ) -> payment_pb2.Payment:
        booking_id = identifier("booking_id", request.booking_id)
        return payment_message(await handlers.get_payment_for_booking(self._deps, booking_id))

    async def HandleNotification(
        self, request: payment_pb2.HandleNotificationRequest, context: Context
    ) -> payment_pb2.HandleNotificationResponse:
        notice = requests.notification(request.raw_body, request.signature_header)
        await handlers.handle_notification(self._deps, notice.raw_body, notice.signature_header)
        return payment_pb2.HandleNotificationResponse(accepted=True)

    async def ListPlans(
        self, request: payment_pb2.ListPlansRequest, context: Context
    ) -> payment_pb2.ListPlansResponse:
        plans = await handlers.list_plans(self._deps)
        return payment_pb2.ListPlansResponse(plans=[plan_message(p) for p in plans])

    async def CreatePlan(
        self, request: payment_pb2.CreatePlanRequest, context: Context
    ) -> payment_pb2.Plan:
        new = request.plan
        plan = Plan(
            code=new.plan_code,
            version=new.plan_version,
            kind=new.kind,
            name=new.name,
            price=Money(new.price.amount, new.price.currency),
            entries=new.entries,
            period_days=new.period_days,
        )  # checked by create_plan (Plan.validated) before it is stored
        return plan_message(await handlers.create_plan(self._deps, plan))

    async def ListPayments(
        self, request: payment_pb2.ListPaymentsRequest, context: Context
    ) -> payment_pb2.ListPaymentsResponse:
        state = requests.payment_state_filter(request.state)
        rows = await handlers.list_payments(self._deps, state)
        return payment_pb2.ListPaymentsResponse(payments=[payment_message(r) for r in rows])

    async def ListIncidents(
        self, request: payment_pb2.ListIncidentsRequest, context: Context
    ) -> payment_pb2.ListIncidentsResponse:
        state = requests.incident_state_filter(request.state)
        rows = await handlers.list_incidents(self._deps, state)
        return payment_pb2.ListIncidentsResponse(
            incidents=[protobuf.incident(payment_pb2.Incident, r) for r in rows]
        )


def registration(deps: PaymentDeps) -> Callable[[grpc.aio.Server], None]:
    def register(server: grpc.aio.Server) -> None:
        payment_pb2_grpc.add_PaymentServiceServicer_to_server(PaymentServicer(deps), server)

    return register


SERVICE_NAME = payment_pb2.DESCRIPTOR.services_by_name["PaymentService"].full_name
