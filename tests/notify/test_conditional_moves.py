"""A delivery moves only from the state its mover read: the send job, a recovery and an
operator's decision may race, and the one that read a stale state changes nothing."""

from __future__ import annotations

from services.notify.adapters.repository import DeliveryRepository
from services.notify.domain.model import DeliveryState
from tests.notify.harness import NotifyHarness, a_booking, confirmed
from tests.support.waiting import eventually


async def test_a_move_from_a_state_the_delivery_left_changes_nothing(
    notify: NotifyHarness,
) -> None:
    booking = a_booking()
    await notify.publish("booking.events", booking.booking_id, confirmed(booking))
    sent = await eventually(lambda: _one_delivery(notify, booking.booking_id), 30)
    before = await notify.delivery_in(sent, "sent")
    key = before.delivery_key

    async with notify.app.deps.uows.sessions() as session, session.begin():
        deliveries = DeliveryRepository(session)
        stale = await deliveries.move(key, DeliveryState.QUEUED, DeliveryState.FAILED, "late")
        current = await deliveries.move(key, DeliveryState.SENT, DeliveryState.SENT, tried=True)
    assert (stale, current) == (False, True)
    after = await notify.delivery(key)
    assert (after.state, after.last_error) == ("sent", before.last_error)


async def _one_delivery(notify: NotifyHarness, booking_id: str) -> str | None:
    found = await notify.deliveries_of(booking_id=booking_id)
    return found[0].delivery_key if found else None
