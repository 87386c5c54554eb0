"""The booking service's side of the operators' view (servicekit.operations): a booking
as this service holds it, what its own tables show to be stuck, and its bookings by state
for the gateway's checks that join them with the payment and access services' records."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit import schema
from servicekit.operations import hooks
from servicekit.operations.hooks import OPEN, BookingRecord, DriftFinding, live_finding
from servicekit.operations.states import states_in
from services.booking.adapters import orm
from services.booking.domain.model import BookingState, ClosedReason, PaymentMode, SlotState
from services.booking.domain.pass_orders import (
    ORDER_REFERENCE,
    PASS_CREDIT,
    PASS_CREDIT_REFUSED,
)
from services.booking.domain.payment_claims import PAYMENT_CONFLICT, PAYMENT_REFUSED

SERVICE = "booking"
# The access service removes a code again once its revocation is 10 minutes overdue; a slot
# still closed an hour after the booking left it means the provider has not confirmed
# removal after several tries, and the slot earns nothing meanwhile.
AWAITING_REVOCATION_TOO_LONG = timedelta(hours=1)
# The release timer fires when the hold ends; a booking still pending this long after it
# was not released (its timer failed, or keeps retrying).
HOLD_NOT_RELEASED_AFTER = timedelta(minutes=5)
# The payment service answers a card checkout's PaymentRequested with PaymentCreated within
# seconds; a card booking that holds its slot this long with no payment has lost a step.
NO_PAYMENT_AFTER = timedelta(minutes=2)
MOST = 500  # findings of each kind listed


async def describe_booking(session: AsyncSession, booking_id: str) -> BookingRecord:
    """The booking's state, its slot, its payment and moves; the trace id it stored at
    checkout. Its effects and incidents are keyed by the booking id, a payment's
    unowned money by the payment id."""
    b, s = orm.bookings.c, orm.slots.c
    query = (
        select(orm.bookings, s.state.label("slot_state"), s.closed_reason)
        .join(orm.slots, s.slot_id == b.slot_id)
        .where(b.booking_id == booking_id)
    )
    row = (await session.execute(query)).first()
    if row is None:
        return BookingRecord(known=False, subjects=[booking_id])
    payment_id = row.payment_id or ""
    return BookingRecord(
        known=True,
        subjects=[booking_id, *([payment_id] if payment_id else [])],
        state=row.state,
        facts=_facts(row),
        trace_id=row.trace_id,
    )


def _facts(row: Any) -> dict[str, str]:
    facts = {
        "slot_id": str(row.slot_id),
        "slot_state": row.slot_state,
        "space_id": str(row.space_id),
        "payment_mode": row.payment_mode,
        "paid": "true" if row.paid else "false",
        "moves": str(row.moves),
    }
    if row.closed_reason:
        facts["slot_closed_reason"] = row.closed_reason
    if row.payment_id:
        facts["payment_id"] = row.payment_id
    if row.hold_expires_at is not None:
        facts["hold_expires_at"] = row.hold_expires_at.isoformat()
    return facts


@dataclass(frozen=True)
class BookingDrift:
    """The booking service's drift findings; the bound is a setting
    (BOOKING_DRIFT_NO_PAYMENT_AFTER_SECONDS)."""

    no_payment_after: timedelta = NO_PAYMENT_AFTER

    async def __call__(self, session: AsyncSession, state: str | None) -> list[DriftFinding]:
        """Read live from the tables, never stored or repaired here, so each is `open` for
        as long as the tables show it: slots held closed for a revocation the provider has
        not confirmed for long, bookings still pending well after their hold ran out, and
        card bookings holding their slot with no payment."""
        if state not in (None, OPEN):
            return []
        now = datetime.now(UTC)
        return [
            *await _slots_awaiting_revocation(session, now - AWAITING_REVOCATION_TOO_LONG),
            *await _holds_not_released(session, now - HOLD_NOT_RELEASED_AFTER),
            *await _holds_without_payment(session, now - self.no_payment_after),
            *await _refused_payment_events(session),
            *await _credits_without_paid_order(session),
        ]


drift_findings = BookingDrift()


async def booking_states(
    session: AsyncSession, query: hooks.StateQuery
) -> list[hooks.BookingState]:
    """Bookings by id, or by state among those whose access window has not ended (the ones
    another service's step still matters for)."""
    b = orm.bookings.c
    return await states_in(
        session, b.booking_id, b.state, b.updated_at, query, b.valid_to > func.now()
    )


async def _slots_awaiting_revocation(session: AsyncSession, since: datetime) -> list[DriftFinding]:
    s = orm.slots.c
    query = (
        select(s.slot_id, s.updated_at)
        .where(
            s.state == SlotState.CLOSED.value,
            s.closed_reason == ClosedReason.AWAITING_REVOCATION.value,
            s.updated_at < since,
        )
        .order_by(s.updated_at)
        .limit(MOST)
    )
    return [
        live_finding(
            SERVICE,
            "slot_awaiting_revocation_too_long",
            str(row.slot_id),
            found_at=row.updated_at,
            problem="the slot is closed because a PIN disclosed for it may still open the door,"
            " and the access service has not confirmed the code's removal since",
            truth="the lock provider: only its confirmation that every code is removed may"
            " reopen the slot",
            repair="none by code: the slot stays closed; look at the access service's"
            " revocation_unconfirmed incident and drift findings for the grant",
        )
        for row in await session.execute(query)
    ]


async def _holds_not_released(session: AsyncSession, before: datetime) -> list[DriftFinding]:
    b = orm.bookings.c
    query = (
        select(b.booking_id, b.hold_expires_at)
        .where(b.state == BookingState.PENDING.value, b.hold_expires_at < before)
        .order_by(b.hold_expires_at)
        .limit(MOST)
    )
    return [
        live_finding(
            SERVICE,
            "hold_not_released",
            str(row.booking_id),
            found_at=row.hold_expires_at,
            problem="the booking is still pending after its hold ran out, so its slot is"
            " held for nobody",
            truth="this service: an unpaid hold ends when it runs out",
            repair="none by code: its release_unpaid_hold timer did not run; see the"
            " booking's failed effects and a timer_failed incident",
        )
        for row in await session.execute(query)
    ]


async def _holds_without_payment(session: AsyncSession, before: datetime) -> list[DriftFinding]:
    b = orm.bookings.c
    query = (
        select(b.booking_id, b.created_at)
        .where(
            b.state == BookingState.PENDING.value,
            b.payment_mode == PaymentMode.CARD.value,
            b.payment_id.is_(None),
            b.created_at < before,
        )
        .order_by(b.created_at)
        .limit(MOST)
    )
    return [
        live_finding(
            SERVICE,
            "card_booking_without_payment",
            str(row.booking_id),
            found_at=row.created_at,
            problem=f"the card booking {row.booking_id} has held its slot since"
            f" {row.created_at:%Y-%m-%d %H:%M:%S} UTC and no payment was made for it: the"
            " customer has no checkout link, and the slot is held for nobody who can pay",
            truth="the payment service: a payment exists only once it announces it"
            " (PaymentCreated), which this booking never received",
            repair="none by code: look for the booking's failed PaymentRequested here and the"
            " payment's failed PaymentCreated at the payment service (each an open"
            " outbox_row_failed incident) and replay it; else the hold runs out and the"
            " slot is sold again",
        )
        for row in await session.execute(query)
    ]


# What the payment service's records say decides each refused payment event.
_REFUSED_TRUTH = (
    "the payment service: only a payment it holds for the booking or order, paid at its"
    " price, is money for it; an event on its topic that does not name that payment is not"
    " its word, or its records and this service's disagree"
)
_REFUSED_REPAIR = {
    PAYMENT_REFUSED: "none by code: the booking kept its state and no refund was asked for."
    " Compare the named payment with the booking's at the payment service (DescribeBooking):"
    " if no such payment was made, the event was forged (find who writes the topic); if it"
    " was, replay its PaymentSucceeded there. Resolve the incident when decided",
    PAYMENT_CONFLICT: "none by code: the booking stays confirmed by the earlier payment. If"
    " the payment service holds only the later payment and it is not paid, the booking was"
    " confirmed by a forged event: cancel it; resolve the incident when decided",
    PASS_CREDIT_REFUSED: "none by code: nothing was credited. Look the order up at the"
    " payment service: if it is paid and its PassOrderPaid came before its payment's"
    " success, replay that PassOrderPaid there (it is credited once); if no such order was"
    " paid, the event was forged (find who writes the topic). Resolve the incident when"
    " decided",
}


async def _refused_payment_events(session: AsyncSession) -> list[DriftFinding]:
    """Open incidents of payment events not believed, said as findings of their booking
    or pass order."""
    i = orm.eventing.incidents.c
    query = (
        select(i.kind, i.subject_id, i.detail, i.opened_at)
        .where(i.state == schema.OPEN, i.kind.in_(tuple(_REFUSED_REPAIR)))
        .order_by(i.opened_at)
        .limit(MOST)
    )
    return [
        live_finding(
            SERVICE,
            row.kind,
            row.subject_id,
            found_at=row.opened_at,
            problem=row.detail,
            truth=_REFUSED_TRUTH,
            repair=_REFUSED_REPAIR[row.kind],
        )
        for row in await session.execute(query)
    ]


async def _credits_without_paid_order(session: AsyncSession) -> list[DriftFinding]:
    """Credits are made only for orders whose payment was heard to succeed; one without is
    a credit made before this service recorded orders' payments, or a defect."""
    e, o = orm.pass_ledger.c, orm.pass_orders.c
    order_id = func.substr(e.reference, len(ORDER_REFERENCE) + 1)
    query = (
        select(e.org_id, e.delta, e.at, order_id.label("order_id"))
        .outerjoin(orm.pass_orders, o.order_id == order_id)
        .where(e.reason == PASS_CREDIT, o.payment_id.is_(None))
        .order_by(e.at)
        .limit(MOST)
    )
    return [
        live_finding(
            SERVICE,
            "pass_credit_without_paid_order",
            row.order_id,
            found_at=row.at,
            problem=f"organisation {row.org_id} was credited {row.delta} pass entries for order"
            f" {row.order_id} at {row.at:%Y-%m-%d %H:%M:%S} UTC, and this service never heard"
            " that the order's payment succeeded: the entries may open doors nobody paid for",
            truth="the payment service: an order is paid only when its payment is",
            repair="none by code: look the order up at the payment service; if it is not"
            " paid, debit the entries the organisation has not used yet and find who wrote the"
            " payment topic",
        )
        for row in await session.execute(query)
    ]
