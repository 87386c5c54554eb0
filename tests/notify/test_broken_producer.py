"""Notify's relay gets over a producer the broker refuses for good (a gap in its
idempotent sequence, as a broker restart leaves it): the producer is replaced, and the
record of every mail sent goes out with no row marked failed. A relay that blamed the
rows marked each of them failed after its attempts."""

from __future__ import annotations

import pytest

from tests.notify.conftest import HarnessFactory
from tests.notify.harness import a_booking, activated, confirmed, new_id
from tests.support.broken_producer import GappedFirstProducer, relayed_blaming_no_row

BOOKINGS = 3


async def test_mails_recorded_through_a_refused_producer_go_out_on_a_new_one(
    make_notify: HarnessFactory,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    producers = GappedFirstProducer(monkeypatch, "notify", "notify.events")
    notify = await make_notify()
    for booking in [a_booking("en") for _ in range(BOOKINGS)]:
        grant_id = new_id()
        notify.issue_pin(booking, grant_id)
        await notify.publish("booking.events", booking.booking_id, confirmed(booking))
        await notify.publish("access.events", booking.booking_id, activated(booking, grant_id))

    # Two mails a booking (confirmed, its door code), each recorded on notify.events.
    engine = notify.app.runtime.engine
    states = await relayed_blaming_no_row(engine, producers, caplog, at_least=2 * BOOKINGS)
    assert states.get("dispatched", 0) >= 2 * BOOKINGS
