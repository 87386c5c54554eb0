"""The PaymentService gRPC servicer: translation only, domain errors mapped here, once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

import grpc
from google.protobuf import timestamp_pb2
from liftfit.payment.v1 import events_pb2, payment_pb2, payment_pb2_grpc

from servicekit.grpc_server import abort_with_reason
from services.payment.adapters.card_gateway import GatewayUnavailable
from services.payment.domain import errors
from services.payment.domain.money import Money
from services.payment.domain.orders import CreateOrder, Plan
from services.payment.entrypoints import requests
from services.payment.service_layer import handlers
from services.payment.service_layer.dependencies import PaymentDeps

T = TypeVar("T")

STATUS_OF: dict[type[errors.PaymentDomainError], grpc.StatusCode] = {
    errors.IdempotencyConflict: grpc.StatusCode.FAILED_PRECONDITION,
    errors.InvalidIdempotencyKey: grpc.StatusCode.INVALID_ARGUMENT,
    errors.UnknownPlan: grpc.StatusCode.INVALID_ARGUMENT,
    errors.InvalidPlan: grpc.StatusCode.INVALID_ARGUMENT,
    errors.PlanVersionExists: grpc.StatusCode.ALREADY_EXISTS,
    errors.OrderExists: grpc.StatusCode.ALREADY_EXISTS,
    errors.InvalidSignature: grpc.StatusCode.INVALID_ARGUMENT,
    errors.NotFound: grpc.StatusCode.NOT_FOUND,
    errors.AmountMismatch: grpc.StatusCode.FAILED_PRECONDITION,
}


async def answer(context: Any, call: Callable[[], Awaitable[T]]) -> T:
    """Runs a use case; a domain error ends the call with its status and reason."""
    try:
        return await call()
    except errors.OrderExists as error:
        # The HTTP gateway names the existing order in its problem details.
        metadata = {"existing_order_id": error.existing_order_id}
        await abort_with_reason(
            context, grpc.StatusCode.ALREADY_EXISTS, error.reason, str(error), metadata=metadata
        )
    except errors.InvalidRequest as error:
        # The field goes back too, so the gateway can name it in its problem details.
        named = {"field": error.field} if error.field else {}
        await abort_with_reason(
            context, grpc.StatusCode.INVALID_ARGUMENT, error.reason, str(error), metadata=named
        )
    except errors.PaymentDomainError as error:
        code = STATUS_OF.get(type(error), grpc.StatusCode.FAILED_PRECONDITION)
        await abort_with_reason(context, code, error.reason, str(error))
    except GatewayUnavailable as error:
        await abort_with_reason(
            context, grpc.StatusCode.UNAVAILABLE, "gateway_unavailable", str(error)
        )
    raise AssertionError("unreachable: abort raises")


def timestamp(moment: datetime | None) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    if moment is not None:
        stamp.FromDatetime(moment)
    return stamp


def money(value: Money) -> events_pb2.Money:
    return events_pb2.Money(amount=value.amount, currency=value.currency)


def payment_message(row: Any) -> payment_pb2.Payment:
    return payment_pb2.Payment(
        payment_id=str(row.payment_id),
        state=row.state,
        checkout_url=row.checkout_url or "",
        amount=events_pb2.Money(amount=row.amount, currency=row.currency),
        booking_id=row.booking_id or "",
        order_id=str(row.order_id) if row.order_id else "",
        provider_payment_id=row.provider_payment_id or "",
        created_at=timestamp(row.created_at),
        updated_at=timestamp(row.updated_at),
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


def incident_message(row: Any) -> payment_pb2.Incident:
    return payment_pb2.Incident(
        incident_id=str(row.incident_id),
        kind=row.kind,
        subject_id=row.subject_id,
        state=row.state,
        detail=row.detail,
        opened_at=timestamp(row.opened_at),
    )


class PaymentServicer(payment_pb2_grpc.PaymentServiceServicer):
    def __init__(self, deps: PaymentDeps) -> None:
        self._deps = deps

    # Every request is checked inside `answer`, so a refusal is a status like any other.

    async def CreateOrder(self, request: Any, context: Any) -> payment_pb2.OrderReply:
        async def create() -> handlers.OrderView:
            command = CreateOrder(
                org_id=request.org_id,
                user=request.user,
                idempotency_key=request.idempotency_key,
                plan_code=request.plan_code,
                plan_version=request.plan_version,
            )
            return await handlers.create_order(self._deps, command)

        view = await answer(context, create)
        return payment_pb2.OrderReply(order=order_message(view), replayed=view.replayed)

    async def GetOrder(self, request: Any, context: Any) -> payment_pb2.Order:
        async def get() -> handlers.OrderView:
            org_id = requests.identifier("org_id", request.org_id)
            order_id = requests.identifier("order_id", request.order_id)
            return await handlers.get_order(self._deps, org_id, order_id)

        return order_message(await answer(context, get))

    async def GetPayment(self, request: Any, context: Any) -> payment_pb2.Payment:
        async def get() -> Any:
            payment_id = requests.identifier("payment_id", request.payment_id)
            return await handlers.get_payment(self._deps, payment_id)

        return payment_message(await answer(context, get))

    async def GetPaymentForBooking(self, request: Any, context: Any) -> payment_pb2.Payment:
        async def get() -> Any:
            booking_id = requests.identifier("booking_id", request.booking_id)
            return await handlers.get_payment_for_booking(self._deps, booking_id)

        return payment_message(await answer(context, get))

    async def HandleNotification(
        self, request: Any, context: Any
    ) -> payment_pb2.HandleNotificationResponse:
        async def handle() -> None:
            notice = requests.notification(request.raw_body, request.signature_header)
            await handlers.handle_notification(self._deps, notice.raw_body, notice.signature_header)

        await answer(context, handle)
        return payment_pb2.HandleNotificationResponse(accepted=True)

    async def ListPlans(self, request: Any, context: Any) -> payment_pb2.ListPlansResponse:
        plans = await answer(context, lambda: handlers.list_plans(self._deps))
        return payment_pb2.ListPlansResponse(plans=[plan_message(p) for p in plans])

    async def CreatePlan(self, request: Any, context: Any) -> payment_pb2.Plan:
        plan = Plan(
            code=request.plan_code,
            version=request.plan_version,
            kind=request.kind,
            name=request.name,
            price=Money(request.price.amount, request.price.currency),
            entries=request.entries,
            period_days=request.period_days,
        )  # checked by create_plan (Plan.validated) before it is stored
        created = await answer(context, lambda: handlers.create_plan(self._deps, plan))
        return plan_message(created)

    async def ListPayments(self, request: Any, context: Any) -> payment_pb2.ListPaymentsResponse:
        async def listed() -> list[Any]:
            state = requests.payment_state_filter(request.state)
            return await handlers.list_payments(self._deps, state)

        rows = await answer(context, listed)
        return payment_pb2.ListPaymentsResponse(payments=[payment_message(r) for r in rows])

    async def ListIncidents(self, request: Any, context: Any) -> payment_pb2.ListIncidentsResponse:
        async def listed() -> list[Any]:
            state = requests.incident_state_filter(request.state)
            return await handlers.list_incidents(self._deps, state)

        rows = await answer(context, listed)
        return payment_pb2.ListIncidentsResponse(incidents=[incident_message(r) for r in rows])


def registration(deps: PaymentDeps) -> Callable[[grpc.aio.Server], None]:
    def register(server: grpc.aio.Server) -> None:
        payment_pb2_grpc.add_PaymentServiceServicer_to_server(PaymentServicer(deps), server)

    return register


SERVICE_NAME = payment_pb2.DESCRIPTOR.services_by_name["PaymentService"].full_name
