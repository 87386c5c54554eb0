"""Booking's relay gets over a producer the broker refuses for good (a gap in its
idempotent sequence, as a broker restart leaves it): the producer is replaced, and every
checkout's events go out with no row marked failed. A relay that blamed the rows marked
each of them failed after its attempts."""

from __future__ import annotations

import pytest

from tests.booking.conftest import StartBooking
from tests.booking.harness import new_id
from tests.support.broken_producer import GappedFirstProducer, relayed_blaming_no_row

CHECKOUTS = 6


async def test_checkouts_published_through_a_refused_producer_go_out_on_a_new_one(
    start_booking: StartBooking,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    producers = GappedFirstProducer(monkeypatch, "booking", "booking.events")
    booking = await start_booking()
    org = new_id()
    for slot in await booking.space_with_slots(CHECKOUTS):
        await booking.checkout(slot.slot_id, org, payment_mode="card")

    await relayed_blaming_no_row(booking.app.runtime.engine, producers, caplog, at_least=CHECKOUTS)
