"""Payment's relay gets over a producer the broker refuses for good (a gap in its
idempotent sequence, as a broker restart leaves it): the producer is replaced, and the
events of every payment opened at the card gateway go out with no row marked failed. A
relay that blamed the rows marked each of them failed after its attempts."""

from __future__ import annotations

import pytest

from tests.payment.conftest import HarnessFactory
from tests.support.broken_producer import GappedFirstProducer, relayed_blaming_no_row

PAYMENTS = 6


async def test_payments_published_through_a_refused_producer_go_out_on_a_new_one(
    make_harness: HarnessFactory,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    producers = GappedFirstProducer(monkeypatch, "payment", "payment.events")
    harness = await make_harness()
    bookings = [await harness.request_payment() for _ in range(PAYMENTS)]
    for booking_id in bookings:
        await harness.payment_when(booking_id, lambda p: bool(p.checkout_url))

    states = await relayed_blaming_no_row(
        harness.app.runtime.engine, producers, caplog, at_least=PAYMENTS
    )
    assert states.get("dispatched", 0) >= PAYMENTS
