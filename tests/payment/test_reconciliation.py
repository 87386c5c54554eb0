"""Acceptance h: with every notification lost, the sweep still finds each payment's truth."""

from __future__ import annotations

from sqlalchemy import select, update

from servicekit.recurring import RECURRING
from services.payment.service_layer import jobs
from tests.payment.conftest import HarnessFactory
from tests.payment.harness import eventually


async def test_with_every_notification_dropped_the_sweep_settles_each_payment(
    make_harness: HarnessFactory,
) -> None:
    harness = await make_harness(reconcile_after_s=1, reconcile_every_s=1)
    await harness.faults(drop_notifications=True)
    paid, failed, expired, untouched = [await harness.opened_payment() for _ in range(4)]

    await harness.settle(paid.provider_payment_id, "succeed")
    await harness.settle(failed.provider_payment_id, "fail")
    await harness.gateway.post(f"/_sandbox/payments/{expired.provider_payment_id}/expire")

    await harness.payment_in(paid.booking_id, "paid", within=15)
    await harness.payment_in(failed.booking_id, "failed", within=15)
    await harness.payment_in(expired.booking_id, "expired", within=15)
    assert (await harness.payment(untouched.booking_id)).state == "pending"  # type: ignore[union-attr]
    deliveries = (await harness.gateway.get("/_sandbox/notifications")).json()["data"]
    assert deliveries and {d["status"] for d in deliveries} == {"dropped"}


async def test_the_sweep_resumes_a_payment_whose_creation_never_reached_the_gateway(
    make_harness: HarnessFactory,
) -> None:
    # Two tries only, both refused with 503: the create job gives up with an incident.
    harness = await make_harness(reconcile_after_s=1, reconcile_every_s=1, gateway_max_tries=2)
    await harness.faults(fail_next_calls=2)

    booking_id = await harness.request_payment()

    payment = await harness.payment_when(booking_id, lambda p: bool(p.checkout_url), within=15)
    assert len(await harness.gateway_payments(reference=payment.payment_id)) == 1


async def test_a_sweep_that_ended_failed_is_scheduled_again_while_the_service_runs(
    make_harness: HarnessFactory,
) -> None:
    harness = await make_harness(reconcile_after_s=1, reconcile_every_s=1)
    timers = harness.app.tables.eventing.timers
    sweep = (timers.c.kind == jobs.RECONCILE_SWEEP) & (timers.c.aggregate_id == RECURRING)
    async with harness.app.sessions() as session, session.begin():
        # What the timer runner does to a job that failed past its bound.
        await session.execute(update(timers).where(sweep).values(state="failed"))

    async def a_pending_sweep() -> bool:
        async with harness.app.sessions() as session:
            pending = select(timers.c.timer_id).where(sweep, timers.c.state == "pending")
            return (await session.execute(pending)).first() is not None

    await eventually(a_pending_sweep, within=10)
