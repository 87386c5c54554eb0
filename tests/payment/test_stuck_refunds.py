"""Acceptance e: a refund that cannot finish is visible, and one left without a job resumes.

A refund job that gets no answer ends `refund_failed` with a `refund_failed` incident
(test_gateway_calls). These cover the two other ways a refund gets stuck.
"""

from __future__ import annotations

import psycopg
from liftfit.booking.v1 import events_pb2 as booking
from sqlalchemy import make_url, select, update

from services.payment.service_layer import jobs
from tests.payment.conftest import HarnessFactory
from tests.payment.harness import Harness, eventually
from tests.payment.support import open_incidents
from tests.support.infrastructure import Infrastructure, database_url


async def _paid(harness: Harness) -> tuple[str, str, str]:
    """booking id, payment id and gateway id of a payment the customer has paid."""
    payment = await harness.opened_payment()
    await harness.settle(payment.provider_payment_id)
    await harness.payment_in(payment.booking_id, "paid")
    return payment.booking_id, payment.payment_id, payment.provider_payment_id


async def _timer_states(harness: Harness, kind: str, payment_id: str) -> list[str]:
    t = harness.app.tables.eventing.timers.c
    query = select(t.state).where(t.kind == kind, t.aggregate_id == payment_id)
    async with harness.app.sessions() as session:
        return list((await session.execute(query)).scalars())


async def test_a_refund_whose_job_keeps_failing_ends_failed_with_an_open_incident(
    harness: Harness, infra: Infrastructure
) -> None:
    booking_id, payment_id, provider_id = await _paid(harness)
    # The database refuses to record the refund, as a defect in the job would: every try
    # refunds at the gateway, then raises. Only the owner may alter the table.
    name = make_url(harness.app.settings.database_url).database or ""
    async with await psycopg.AsyncConnection.connect(
        database_url(infra.pg_admin_dsn, name), autocommit=True
    ) as owner:
        await owner.execute(
            "ALTER TABLE payments ADD CONSTRAINT no_refund CHECK (state <> 'refunded')"
        )

    cancelled = booking.BookingCancelled(booking_id=booking_id, refund_due=True)
    await harness.publish(cancelled, booking_id)

    [incident] = await eventually(lambda: open_incidents(harness, payment_id), within=20)
    assert incident.kind == "timer_failed"
    assert incident.subject_id == f"{jobs.REFUND_AT_GATEWAY}:{payment_id}"
    assert await _timer_states(harness, jobs.REFUND_AT_GATEWAY, payment_id) == ["failed"]
    assert (await harness.payment(booking_id)).state == "refund_pending"  # type: ignore[union-attr]
    remote = await harness.gateway_payment(provider_id)
    assert remote["refunded_amount"] == 45000  # five tries, one refund: the same key


async def test_the_sweep_requests_again_a_refund_owed_that_no_job_will_request(
    make_harness: HarnessFactory,
) -> None:
    harness = await make_harness(reconcile_after_s=1, reconcile_every_s=1)
    booking_id, payment_id, provider_id = await _paid(harness)
    payments = harness.app.tables.payments
    async with harness.app.sessions() as session, session.begin():
        # What a refund job that ended failed leaves: refund owed, no job pending.
        await session.execute(
            update(payments)
            .where(payments.c.payment_id == payment_id)
            .values(state="refund_pending")
        )

    await harness.payment_in(booking_id, "refunded", within=20)
    remote = await harness.gateway_payment(provider_id)
    assert (remote["state"], remote["refunded_amount"]) == ("refunded", 45000)
    assert "pending" not in await _timer_states(harness, jobs.REFUND_AT_GATEWAY, payment_id)
