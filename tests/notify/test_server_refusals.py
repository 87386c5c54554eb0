"""Acceptance c: a mail server that refuses connections for 30 s delays mails and then
sends each exactly once; a 5xx refusal fails visibly with an incident; a 4xx that never
ends uses up the bounded tries and fails with an incident too."""

from __future__ import annotations

from liftfit.notify.v1 import notify_pb2 as npb

from tests.notify.harness import NotifyHarness, a_booking, confirmed
from tests.support.waiting import eventually

OUTAGE_MS = 30_000


async def _confirmation(notify: NotifyHarness) -> str:
    booking = a_booking()
    await notify.publish("booking.events", booking.booking_id, confirmed(booking))

    async def made() -> list[npb.Delivery] | None:
        return await notify.deliveries_of(booking.booking_id) or None

    [delivery] = await eventually(made, 15)
    return delivery.delivery_key


async def test_an_outage_of_the_mail_server_delays_mails_then_sends_each_once(
    notify: NotifyHarness,
) -> None:
    await notify.faults(offline_for_ms=OUTAGE_MS)
    keys = [await _confirmation(notify) for _ in range(3)]

    async def tried_during_the_outage() -> bool:
        found = [await notify.delivery(key) for key in keys]
        return all(d.state == "queued" and d.tries >= 2 for d in found)

    await eventually(tried_during_the_outage, 15)
    for key in keys:
        assert await notify.mails(key) == []
        assert "before the data" in (await notify.delivery(key)).last_error
    for key in keys:
        await notify.delivery_in(key, "sent", within=OUTAGE_MS / 1000 + 15)
    for key in keys:
        assert len(await notify.mails(key)) == 1
        assert not await notify.sends_pending(key)
        assert await notify.incidents(key) == []


async def test_a_permanent_refusal_fails_the_delivery_with_an_incident(
    notify: NotifyHarness,
) -> None:
    await notify.faults(refuse_next=1, refuse_code=550, refuse_message="5.1.1 No such user")
    key = await _confirmation(notify)
    failed = await notify.delivery_in(key, "failed")
    assert failed.last_error == "550 5.1.1 No such user"
    assert failed.tries == 1
    [incident] = await notify.incidents(key)
    assert incident.kind == "delivery_failed"
    assert await notify.mails(key) == []
    assert not await notify.sends_pending(key)
    undecided = await notify.stub.ListUndecidedDeliveries(
        npb.ListUndecidedDeliveriesRequest(state="failed")
    )
    assert [d.delivery_key for d in undecided.deliveries] == [key]


async def test_a_temporary_refusal_that_never_ends_fails_after_the_bounded_tries(
    make_notify: object,
) -> None:
    notify: NotifyHarness = await make_notify(send_max_tries=3)  # type: ignore[operator]
    await notify.faults(refuse_next=100, refuse_code=451)
    key = await _confirmation(notify)
    failed = await notify.delivery_in(key, "failed")
    assert failed.tries == 3
    assert failed.last_error.startswith("451 ")
    [incident] = await notify.incidents(key)
    assert incident.kind == "delivery_failed"
    assert not await notify.sends_pending(key)
