"""The payment service's side of the operators' view (servicekit.operations): a booking's
payment as this service holds it, the payments its own table shows to be stuck, and its
bookings' payments by state for the gateway's checks that join them with the bookings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.operations.hooks import (
    OPEN,
    BookingRecord,
    BookingState,
    DriftFinding,
    StateQuery,
    live_finding,
)
from servicekit.operations.states import states_in
from services.payment.adapters.orm import Tables
from services.payment.domain.payment_states import PENDING, REFUND_FAILED, REFUND_PENDING

SERVICE = "payment"
# When a hold runs out the booking expires and this service cancels the payment at the
# gateway at once; one still pending this long after was neither paid nor cancelled.
PENDING_PAST_HOLD = timedelta(minutes=10)
# A refund job retries for a few minutes before it gives up as refund_failed; one still
# pending after an hour is not being worked on.
REFUND_PENDING_TOO_LONG = timedelta(hours=1)
MOST = 500  # findings of each kind listed


class PaymentOperatorView:
    """Both hooks over the payments table; `Tables` are built per app (orm.build_tables)."""

    def __init__(self, tables: Tables) -> None:
        self._payments = tables.payments

    async def describe_booking(self, session: AsyncSession, booking_id: str) -> BookingRecord:
        """The booking's payment: its state and ids. Its events are keyed by the booking,
        its gateway jobs by the payment id, an unknown gateway payment by the provider's."""
        p = self._payments.c
        row = (
            await session.execute(select(self._payments).where(p.booking_id == booking_id))
        ).first()
        if row is None:
            return BookingRecord(known=False, subjects=[booking_id])
        provider_id = row.provider_payment_id or ""
        return BookingRecord(
            known=True,
            subjects=[booking_id, str(row.payment_id), *([provider_id] if provider_id else [])],
            state=row.state,
            facts=_facts(row),
        )

    async def booking_states(self, session: AsyncSession, query: StateQuery) -> list[BookingState]:
        """Bookings' payments by booking id, or by state (an order's payment names no
        booking and is never listed)."""
        p = self._payments.c
        return await states_in(
            session, p.booking_id, p.state, p.updated_at, query, p.booking_id.is_not(None)
        )

    async def drift_findings(self, session: AsyncSession, state: str | None) -> list[DriftFinding]:
        """Read live from the payments table, never stored or repaired here, so each is
        `open` while the table shows it: payments still pending well past their hold,
        refunds pending for long, and refunds the gateway never confirmed."""
        if state not in (None, OPEN):
            return []
        now, p = datetime.now(UTC), self._payments.c
        return [
            *await self._listed(
                session,
                (p.state == PENDING) & (p.hold_expires_at < now - PENDING_PAST_HOLD),
                "pending_past_hold",
                "the payment is still pending at the gateway although its hold ran out: the"
                " customer may still pay for a booking that has expired",
                "the card gateway: only it knows whether the customer paid",
                "none by code beyond the reconciliation sweep, which reads the gateway; look"
                " at the payment there, and at a failed cancel job of it",
            ),
            *await self._listed(
                session,
                (p.state == REFUND_PENDING) & (p.updated_at < now - REFUND_PENDING_TOO_LONG),
                "refund_pending_too_long",
                "a refund was requested over an hour ago and the gateway has not confirmed it",
                "the card gateway: the refund is done only when it says so",
                "none by code beyond the sweep, which requests the refund again under the same"
                " refund key if the gateway still shows the payment paid",
            ),
            *await self._listed(
                session,
                p.state == REFUND_FAILED,
                "refund_failed",
                "the gateway never confirmed the refund: the customer may not have their money",
                "the card gateway: the refund is done only when it says so",
                "none by code: a human checks the refund at the gateway and resolves the"
                " refund_failed incident",
            ),
        ]

    async def _listed(
        self,
        session: AsyncSession,
        condition: ColumnElement[bool],
        kind: str,
        problem: str,
        truth: str,
        repair: str,
    ) -> list[DriftFinding]:
        p = self._payments.c
        query = select(p.payment_id, p.updated_at).where(condition).order_by(p.updated_at)
        return [
            live_finding(SERVICE, kind, str(row.payment_id), row.updated_at, problem, truth, repair)
            for row in await session.execute(query.limit(MOST))
        ]


def _facts(row: Any) -> dict[str, str]:
    facts = {
        "payment_id": str(row.payment_id),
        "attempt": str(row.attempt),
        "amount": f"{row.amount} {row.currency}",
    }
    if row.provider_payment_id:
        facts["provider_payment_id"] = row.provider_payment_id
    if row.hold_expires_at is not None:
        facts["hold_expires_at"] = row.hold_expires_at.isoformat()
    if row.reconciled_at is not None:
        facts["reconciled_at"] = row.reconciled_at.isoformat()
    return facts
