"""The events a payment transition publishes, built from the payment's own snapshot."""

from __future__ import annotations

from google.protobuf.message import Message
from liftfit.payment.v1 import events_pb2

from servicekit import contacts, protobuf
from services.payment.domain import payment_states as states
from services.payment.domain.money import Money
from services.payment.domain.orders import PASS, Order
from services.payment.domain.payment import Payment


def money(value: Money) -> events_pb2.Money:
    return protobuf.money(events_pb2.Money, value)


def _contact(payment: Payment) -> events_pb2.Contact:
    return contacts.message(events_pb2.Contact, payment.contact)


def _ids(payment: Payment) -> dict[str, str]:
    return {
        "payment_id": str(payment.payment_id),
        "booking_id": payment.booking_id or "",
        "order_id": str(payment.order_id) if payment.order_id else "",
    }


def payment_created(payment: Payment, checkout_url: str) -> events_pb2.PaymentCreated:
    return events_pb2.PaymentCreated(**_ids(payment), checkout_url=checkout_url)


def for_transition(payment: Payment) -> Message | None:
    """The event that announces the payment's new state, if the state is announced."""
    state = payment.state
    if state == states.PAID:
        return events_pb2.PaymentSucceeded(
            **_ids(payment), amount=money(payment.amount), contact=_contact(payment)
        )
    if state in (states.FAILED, states.EXPIRED, states.CANCELLED):
        return events_pb2.PaymentFailed(**_ids(payment), state=state)
    if state == states.REFUND_PENDING:
        return events_pb2.RefundRequested(
            payment_id=str(payment.payment_id),
            booking_id=payment.booking_id or "",
            amount=money(payment.amount),
        )
    if state in (states.REFUNDED, states.REFUND_FAILED):
        return events_pb2.PaymentRefunded(
            payment_id=str(payment.payment_id),
            booking_id=payment.booking_id or "",
            state=state,
            contact=_contact(payment),
            amount=money(payment.amount),
        )
    return None


def pass_order_paid(order: Order) -> events_pb2.PassOrderPaid | None:
    if order.kind != PASS:
        return None
    return events_pb2.PassOrderPaid(
        order_id=str(order.order_id),
        org_id=order.org_id,
        entries=order.entries,
        plan_code=order.plan_code,
        plan_version=order.plan_version,
    )
