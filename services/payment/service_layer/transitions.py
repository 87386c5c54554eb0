"""Applying the gateway's truth and the owners' decisions to a payment, conditionally.

Every transition is a compare-and-set on the payment's state and publishes its event in
the same transaction, so a repeated, late or reordered input finds the state already
moved and changes nothing: one confirmation, one refund, one event.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from servicekit import tracing
from services.payment.domain import payment_states as states
from services.payment.domain.orders import ORDER_PENDING, order_state_after_payment
from services.payment.domain.payment import Payment, RemotePayment, amount_matches
from services.payment.service_layer import announcements, jobs
from services.payment.service_layer.unit_of_work import UnitOfWork

log = logging.getLogger(__name__)


async def move_payment(uow: UnitOfWork, payment: Payment, target: str) -> Payment | None:
    """Moves the payment if the machine allows it and nobody moved it first."""
    if not states.can_move(payment.state, target):
        return None
    if not await uow.payments.move(payment.payment_id, payment.state, target):
        return None
    moved = replace(payment, state=target)
    event = announcements.for_transition(moved)
    if event is not None:
        await uow.publish(moved.owner_id, event)
    await _follow_up(uow, moved)
    return moved


async def _follow_up(uow: UnitOfWork, payment: Payment) -> None:
    if payment.state == states.REFUND_PENDING:
        await jobs.schedule_refund(uow, payment.payment_id)
    if payment.state == states.REFUND_FAILED:
        await uow.incidents.open(
            "refund_failed", str(payment.payment_id), "refund not confirmed by the gateway"
        )
    if payment.order_id is not None:
        await _order_follows(uow, payment)


async def _order_follows(uow: UnitOfWork, payment: Payment) -> None:
    target = order_state_after_payment(payment.state)
    order = await uow.orders.get(payment.order_id) if payment.order_id else None
    if target is None or order is None:
        return
    if not await uow.orders.move(order.order_id, ORDER_PENDING, target):
        return
    announced = announcements.pass_order_paid(order) if target == "paid" else None
    if announced is not None:
        await uow.publish(str(order.order_id), announced)


async def apply_remote(uow: UnitOfWork, payment: Payment, remote: RemotePayment) -> Payment:
    """Reconciles the locked local payment with the gateway's current view of it."""
    subject = str(payment.payment_id)
    if remote.reference != payment.reference:
        await uow.incidents.open("reference_mismatch", subject, f"gateway says {remote.reference}")
        return payment
    payment = await _adopt(uow, payment, remote)
    if payment.provider_payment_id != remote.provider_payment_id:
        detail = f"second gateway payment {remote.provider_payment_id}"
        await uow.incidents.open("second_remote_payment", subject, detail)
        return payment
    if not amount_matches(payment, remote):
        detail = f"gateway {remote.amount}, snapshot {payment.amount}"
        log.warning("payment %s: amount mismatch: %s", subject, detail)
        await uow.incidents.open("amount_mismatch", subject, detail)
        return payment
    target = states.target_for_remote(payment.state, remote.state)
    if not target:
        return payment
    # What the gateway tells us may come with any request (a notification, a sweep): the
    # change and its events stay in the trace of the booking or order that made the payment.
    with tracing.continuing(await uow.payments.trace_of(payment.payment_id), "payment moved"):
        moved = await move_payment(uow, payment, target)
    return moved or payment


async def _adopt(uow: UnitOfWork, payment: Payment, remote: RemotePayment) -> Payment:
    """Records the gateway's id the first time we learn it (from a reply or a lookup)."""
    if payment.provider_payment_id is not None:
        return payment
    pid, url = remote.provider_payment_id, remote.checkout_url
    if not await uow.payments.adopt_remote(payment.payment_id, pid, url):
        return payment
    adopted = replace(payment, provider_payment_id=pid, checkout_url=url)
    if adopted.state == states.PENDING:
        await uow.publish(adopted.owner_id, announcements.payment_created(adopted, url))
    elif adopted.state == states.CANCELLED and remote.state == states.PENDING:
        # The owner gave up while the create call was in flight: stop it at the gateway too.
        await jobs.schedule_cancellation(uow, adopted.payment_id)
    return adopted


async def release_payment(uow: UnitOfWork, payment: Payment) -> Payment | None:
    """The booking is gone: cancel a pending payment at the gateway, refund a paid one."""
    target = states.target_when_owner_gone(payment.state)
    moved = await move_payment(uow, payment, target) if target else None
    if moved is not None and moved.state == states.CANCELLED and moved.provider_payment_id:
        await jobs.schedule_cancellation(uow, moved.payment_id)
    return moved
