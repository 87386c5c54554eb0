"""The booking service's side of the operators' view (servicekit.operations): a booking
as this service holds it, and what its own tables show to be stuck."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.operations.hooks import OPEN, BookingRecord, DriftFinding, live_finding
from services.booking.adapters import orm
from services.booking.domain.model import BookingState, ClosedReason, SlotState

SERVICE = "booking"
# The access service removes a code again once its revocation is 10 minutes overdue; a slot
# still closed an hour after the booking left it means the provider has not confirmed
# removal after several tries, and the slot earns nothing meanwhile.
AWAITING_REVOCATION_TOO_LONG = timedelta(hours=1)
# The release timer fires when the hold ends; a booking still pending this long after it
# was not released (its timer failed, or keeps retrying).
HOLD_NOT_RELEASED_AFTER = timedelta(minutes=5)
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


async def drift_findings(session: AsyncSession, state: str | None) -> list[DriftFinding]:
    """Read live from the tables, never stored or repaired here, so each is `open` for as
    long as the tables show it: slots held closed for a revocation the provider has not
    confirmed for long, and bookings still pending well after their hold ran out."""
    if state not in (None, OPEN):
        return []
    now = datetime.now(UTC)
    return [
        *await _slots_awaiting_revocation(session, now - AWAITING_REVOCATION_TOO_LONG),
        *await _holds_not_released(session, now - HOLD_NOT_RELEASED_AFTER),
    ]


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
