"""Reactions to the payment and access services' events.

Each runs inside the inbox's transaction, so its effects and the "processed" marker
commit together. Every reaction is conditional on the current state: a repeated, late or
reordered event changes nothing, and money never resurrects a booking that ended.

A payment event is believed only for the booking's own payment and price
(domain.payment_claims); one that is not is refused: an incident, and no other change.
In particular it announces no PaymentWithoutBooking: the payment service answers that by
releasing the payment it holds for the booking, so a forged event would make it cancel or
refund the customer's real payment. Money is announced as having no booking only when the
event is the booking's own payment, at its price, and the booking no longer wants it.
"""

from __future__ import annotations

import logging

from services.booking.domain.model import Booking, BookingState, Money
from services.booking.domain.pass_orders import PASS_CREDIT, PassOrder, credit_reference
from services.booking.domain.payment_claims import (
    Refusal,
    payment_conflict,
    payment_for_unknown_booking,
    refusal_of_payment,
)
from services.booking.service_layer import messages
from services.booking.service_layer.slot_release import release_slot
from services.booking.service_layer.unit_of_work import UnitOfWork

log = logging.getLogger(__name__)


async def record_payment_created(uow: UnitOfWork, booking_id: str, payment_id: str) -> None:
    booking = await uow.bookings.lock(booking_id)
    if booking is None:
        return
    conflict = payment_conflict(booking, payment_id)
    if conflict is not None:
        await _refuse(uow, booking_id, conflict)
    elif booking.attach_payment(payment_id):
        await uow.bookings.save(booking)


async def confirm_paid_booking(
    uow: UnitOfWork, booking_id: str, payment_id: str, amount: Money | None
) -> None:
    """The booking's own payment, at its price, while pending and holding its slot:
    confirmed. Its own payment when the booking no longer wants it: refunded. Anything
    else: refused."""
    booking = await uow.bookings.lock(booking_id)
    if booking is None:
        await _refuse(uow, booking_id, payment_for_unknown_booking(booking_id, payment_id))
        return
    if booking.is_paid_with(payment_id):
        return  # a repeated notice; a later cancellation already announced its refund
    refusal = refusal_of_payment(booking, payment_id, amount)
    if refusal is not None:
        await _refuse(uow, booking_id, refusal)
        return
    if booking.state is not BookingState.PENDING:
        reason = f"booking_{booking.state.value}"  # cancelled or expired
        await _announce_payment_without_booking(uow, booking_id, payment_id, reason)
        return
    slot = await uow.slots.lock(booking.slot_id)
    if not slot.book_held(booking.booking_id):
        await _announce_payment_without_booking(uow, booking_id, payment_id, "slot_not_held")
        return
    booking.confirm_if_pending(payment_id)
    await uow.slots.save(slot)
    await uow.bookings.save(booking)
    await uow.cancel_hold_release(booking.booking_id)
    await uow.publish(booking.booking_id, messages.booking_confirmed(booking))


async def _refuse(uow: UnitOfWork, subject_id: str, refusal: Refusal) -> None:
    """Kept for an operator, once while open; nothing else changes."""
    if await uow.incidents.open(refusal.kind, subject_id, refusal.detail):
        log.warning("%s", refusal.detail)


async def _announce_payment_without_booking(
    uow: UnitOfWork, booking_id: str, payment_id: str, reason: str
) -> None:
    # Announced once per payment, however many times its success is reported.
    if await uow.unowned_payments.record(payment_id, booking_id, reason):
        log.warning("payment %s has no booking (%s): refund requested", payment_id, reason)
        event = messages.payment_without_booking(booking_id, payment_id, reason)
        await uow.publish(booking_id, event)


async def expire_unpaid_booking(uow: UnitOfWork, booking_id: str, payment_id: str) -> None:
    """The payment failed or expired: the pending booking ends and its slot is sold again."""
    booking = await uow.bookings.lock(booking_id)
    if booking is None or (booking.payment_id and booking.payment_id != payment_id):
        return  # not this booking's current payment
    await expire_booking(uow, booking)
    await uow.cancel_hold_release(booking_id)


async def expire_booking(uow: UnitOfWork, booking: Booking) -> None:
    if not booking.expire_if_pending():
        return
    await release_slot(uow, booking.booking_id, await uow.slots.lock(booking.slot_id))
    await uow.bookings.save(booking)
    # Lets the payment service cancel the gateway payment that may still be open.
    await uow.publish(booking.booking_id, messages.booking_expired(booking))


async def record_order_paid(
    uow: UnitOfWork, order_id: str, payment_id: str, amount: Money | None
) -> None:
    """A pass order's payment succeeded: its PassOrderPaid may be credited from now on."""
    order = await uow.pass_orders.lock(order_id)
    refusal = order.record_payment(payment_id, amount)
    if refusal is not None:
        await _refuse(uow, order_id, refusal)
    else:
        await uow.pass_orders.save(order)


async def credit_pass_order(uow: UnitOfWork, org_id: str, order_id: str, entries: int) -> None:
    """Credits the entries of an order whose payment succeeded, once; any other is refused."""
    order = await uow.pass_orders.lock_existing(order_id) or PassOrder(order_id)
    refusal = order.record_credit(org_id, entries)
    if refusal is not None:
        await _refuse(uow, order_id, refusal)
        return
    await uow.pass_orders.save(order)
    balance = await uow.passes.lock(org_id)
    credited, entry = balance.credit(entries, PASS_CREDIT, credit_reference(order_id))
    if await uow.passes.apply(credited, entry):
        await uow.publish(org_id, messages.pass_entries_credited(org_id, order_id, entries))


async def note_pin_disclosed(uow: UnitOfWork, booking_id: str, slot_id: str, grant_id: str) -> None:
    """Records the disclosure; a slot the booking already left is closed if it still can be."""
    booking = await uow.bookings.lock(booking_id)
    await uow.disclosures.record_disclosed(booking_id, slot_id, grant_id)
    if booking is None or (booking.is_live and booking.slot_id == slot_id):
        return  # the slot is still the booking's; the rule applies when it leaves
    if not await uow.disclosures.outstanding_for(booking_id, slot_id):
        return  # the revocation was confirmed before the disclosure reached us
    slot = await uow.slots.lock_if_exists(slot_id)
    if slot is None:
        return
    if slot.close_for_late_disclosure():
        await uow.slots.save(slot)
    elif slot.holder is not None:
        log.error("PIN of booking %s disclosed after slot %s was resold", booking_id, slot_id)


async def reopen_after_revocation(
    uow: UnitOfWork, booking_id: str, slot_id: str, grant_id: str
) -> None:
    """The old PIN no longer opens the door: a slot closed for it may be sold again."""
    await uow.disclosures.record_revoked(booking_id, slot_id, grant_id)
    if not await uow.disclosures.outstanding_on_slot(slot_id):
        slot = await uow.slots.lock_if_exists(slot_id)
        if slot is not None and slot.reopen_after_revocation():
            await uow.slots.save(slot)
