"""A payment moves only from the state its mover read: a notification, a reconciliation and
a refund may race, and the one that read a stale state changes nothing."""

from __future__ import annotations

import uuid

from services.payment.adapters.repository import PaymentRepository
from tests.payment.harness import Harness


async def test_a_move_from_a_state_the_payment_left_changes_nothing(harness: Harness) -> None:
    opened = await harness.opened_payment()
    payment_id = uuid.UUID(opened.payment_id)

    async with harness.app.sessions() as session, session.begin():
        payments = PaymentRepository(session, harness.app.tables)
        stale = await payments.move(payment_id, "succeeded", "refunded")
        current = await payments.move(payment_id, opened.state, opened.state)
    assert (stale, current) == (False, True)
    assert (await harness.payment_in(opened.booking_id, opened.state)).state == opened.state
