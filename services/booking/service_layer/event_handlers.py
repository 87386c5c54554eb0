"""Reactions to the payment and access services' events.

Each runs inside the inbox's transaction, so its effects and the "processed" marker
commit together. Every reaction is conditional on the current state: a repeated, late or
reordered event changes nothing, and money never resurrects a booking that ended.
"""

from __future__ import annotations

import logging

from services.booking.domain.model import Booking, BookingState, Money, PaymentMode
from services.booking.service_layer import messages
from services.booking.service_layer.slot_release import release_slot
from services.booking.service_layer.unit_of_work import UnitOfWork

log = logging.getLogger(__name__)


async def record_payment_created(uow: UnitOfWork, booking_id: str, payment_id: str) -> None:
    booking = await uow.bookings.lock(booking_id)
    if booking is not None and booking.attach_payment(payment_id):
        await uow.bookings.save(booking)


async def confirm_paid_booking(
    uow: UnitOfWork, booking_id: str, payment_id: str, amount: Money | None
) -> None:
    """Paid while pending and holding its slot: confirmed. Otherwise the money is refunded."""
    booking = await uow.bookings.lock(booking_id)
    if booking is not None and booking.is_paid_with(payment_id):
        return  # a repeated notice; a later cancellation already announced its refund
    reason = _why_payment_has_no_booking(booking, amount)
    if booking is None or reason is not None:
        await _announce_payment_without_booking(uow, booking_id, payment_id, reason or "")
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


def _why_payment_has_no_booking(booking: Booking | None, amount: Money | None) -> str | None:
    if booking is None:
        return "unknown_booking"
    if booking.payment_mode is PaymentMode.PASS:
        return "booking_paid_by_pass"
    if booking.state is not BookingState.PENDING:
        return f"booking_{booking.state.value}"  # cancelled, expired, or paid by another payment
    if amount is not None and amount != booking.price:
        return "amount_mismatch"
    return None


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


async def credit_pass_order(uow: UnitOfWork, org_id: str, order_id: str, entries: int) -> None:
    balance = await uow.passes.lock(org_id)
    credited, entry = balance.credit(entries, "pass_order_paid", f"order:{order_id}")
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
