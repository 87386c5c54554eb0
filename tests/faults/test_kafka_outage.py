"""A service needs only its database to serve: booking started while Kafka is down answers
reads and checkouts, logs the outage a bounded number of times instead of once per
attempt, and its PaymentRequested events reach the payment service when Kafka returns."""

from __future__ import annotations

import asyncio
import functools
import time

import pytest
from liftfit.booking.v1 import booking_pb2 as bpb

from tests.faults.conftest import MakePlatform
from tests.faults.customers import Customers
from tests.support.health import SERVING, HealthWatch
from tests.support.infrastructure import start_kafka, stop_kafka
from tests.support.processes import HARNESS_MARK
from tests.support.waiting import eventually

OUTAGE_S = 10.0
# Start, the producer's and the consumer's "unreachable" lines: a handful. Before the
# outage log, booking wrote about a hundred lines a second.
MAX_LOG_LINES = 20


async def test_booking_started_while_kafka_is_down_serves_and_its_events_flow_when_kafka_returns(
    make_platform: MakePlatform,
) -> None:
    platform = await make_platform()
    booking = platform.booking
    await asyncio.to_thread(stop_kafka)
    try:
        outage_began = time.monotonic()
        await platform.start("booking", "payment")
        async with Customers.of(platform) as shop, HealthWatch(booking.grpc_target) as health:
            assert await health.next_status(within=5) == SERVING
            spaces = await shop.booking.ListSpaces(bpb.ListSpacesRequest(), timeout=5)
            assert list(spaces.spaces) == []
            slots = await shop.open_slots(3)
            bookings = [await shop.checkout(slot) for slot in slots]
            assert [b.state for b in bookings] == ["pending"] * 3
            # Through the rest of the outage booking keeps answering reads.
            while time.monotonic() - outage_began < OUTAGE_S:
                listed = await shop.booking.ListSpaces(bpb.ListSpacesRequest(), timeout=5)
                assert len(listed.spaces) == 1
                await asyncio.sleep(0.5)
            assert booking.alive, booking.tail()
            lines = [line for line in booking.log_lines() if not line.startswith(HARNESS_MARK)]
            assert any("the broker unreachable" in line for line in lines), booking.tail()
            assert len(lines) < MAX_LOG_LINES, (
                f"{len(lines)} log lines in a {OUTAGE_S:.0f} s outage:\n" + "\n".join(lines)
            )
            # Nothing announced since SERVING: no worker died of the outage.
            with pytest.raises(AssertionError, match="no health change"):
                await health.next_status(within=0.2)
    finally:
        await asyncio.to_thread(start_kafka)

    async with Customers.of(platform) as shop:
        for placed in bookings:
            payment = await eventually(
                functools.partial(shop.payment_at_gateway, placed.booking_id), within=60
            )
            assert payment.booking_id == placed.booking_id
    assert any("reachable again" in line for line in booking.log_lines()), booking.tail()
