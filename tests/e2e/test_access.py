"""From checkout to a PIN that opens the sandbox door, and back: booking, payment and access
in-process on the real broker, with the sandbox card gateway and lock provider processes.

A disclosed booking that is cancelled keeps its slot closed in the booking service until
the lock provider confirms the code removed; then the slot is for sale again and the old
PIN never opens the door. The PIN travels in no Kafka message and no log line.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import grpc
import httpx
import pytest
from aiokafka import AIOKafkaConsumer
from liftfit.access.v1 import access_pb2 as apb
from liftfit.access.v1 import access_pb2_grpc
from liftfit.booking.v1 import booking_pb2 as bpb
from liftfit.booking.v1 import booking_pb2_grpc
from sqlalchemy import select

from servicekit.errors import reason_of
from servicekit.kafka_access import client_security
from services.booking.adapters import orm as booking_orm
from tests.access.harness import DEVICE
from tests.e2e.conftest import Platform
from tests.e2e.test_walking_skeleton import _card_checkout, _pay
from tests.support import tls
from tests.support.sandboxes import SandboxAuth
from tests.support.waiting import eventually

INSIDE = timedelta(minutes=1)


async def _disclosed(platform: Platform, booking: bpb.Booking) -> apb.Access:
    async with tls.channel(f"127.0.0.1:{platform.access.grpc_port}") as channel:
        access = access_pb2_grpc.AccessServiceStub(channel)
        request = apb.DisclosePinRequest(
            org_id=booking.org_id,
            booking_id=booking.booking_id,
            user="anna",
            purpose="customer_view",
        )

        async def pin() -> apb.Access | None:
            try:
                return await access.DisclosePin(request)
            except grpc.aio.AioRpcError as error:
                if reason_of(error) in ("pin_not_active", "not_found"):
                    return None
                raise

        return await eventually(pin, 60)


async def _opens(platform: Platform, pin: str, at: datetime) -> bool:
    async with httpx.AsyncClient(base_url=platform.lock_url, timeout=10) as lock:
        body = {"device_id": DEVICE, "pin": pin, "at": at.isoformat()}
        answer = await lock.post("/_sandbox/door", json=body)
        answer.raise_for_status()
        return bool(answer.json()["opens"])


async def _slot_state(platform: Platform, booking: bpb.Booking) -> str:
    async with tls.channel(f"127.0.0.1:{platform.booking.grpc_port}") as channel:
        stub = booking_pb2_grpc.BookingServiceStub(channel)
        found = await stub.ListSlots(bpb.ListSlotsRequest(space_id=booking.slot.space_id))
    return next(s.state for s in found.slots if s.slot_id == booking.slot.slot_id)


async def _confirmed(platform: Platform) -> tuple[bpb.Booking, apb.Access]:
    booking = await _card_checkout(platform)
    await _pay(platform, booking.booking_id)
    access = await _disclosed(platform, booking)
    return booking, access


async def test_a_paid_checkout_ends_in_a_pin_that_opens_the_door_inside_its_window(
    platform: Platform,
) -> None:
    booking, access = await _confirmed(platform)
    assert access.state == "active" and access.pin
    assert access.valid_from == booking.slot.starts_at  # the window the booking snapshotted
    start = access.valid_from.ToDatetime(tzinfo=UTC)
    end = access.valid_to.ToDatetime(tzinfo=UTC)
    assert await _opens(platform, access.pin, start + INSIDE)
    assert not await _opens(platform, access.pin, start - INSIDE)
    assert not await _opens(platform, access.pin, end + INSIDE)


async def _booking_knows_of_the_disclosure(platform: Platform, booking_id: str) -> bool:
    t = booking_orm.pin_disclosures.c
    async with platform.booking.uows.sessions() as session:
        query = select(t.disclosed_at).where(t.booking_id == booking_id)
        return (await session.execute(query)).scalar_one_or_none() is not None


async def _records_of(platform: Platform) -> list[bytes]:
    topics = [f"{platform.prefix}{name}" for name in ("booking.events", "access.events")]
    consumer = AIOKafkaConsumer(
        *topics,
        bootstrap_servers=platform.booking.settings.kafka_bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        **client_security(),
    )
    await consumer.start()
    try:
        batches = await consumer.getmany(timeout_ms=3000)
        return [
            bytes(record.value or b"") + b"".join(v or b"" for _, v in record.headers)
            for records in batches.values()
            for record in records
        ]
    finally:
        await consumer.stop()


async def test_a_cancelled_disclosed_booking_keeps_its_slot_closed_until_the_code_is_removed(
    platform: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    booking, access = await _confirmed(platform)
    inside = access.valid_from.ToDatetime(tzinfo=UTC) + INSIDE
    assert await _opens(platform, access.pin, inside)
    await eventually(lambda: _booking_knows_of_the_disclosure(platform, booking.booking_id), 30)
    async with httpx.AsyncClient(base_url=platform.lock_url, auth=SandboxAuth(), timeout=5) as lock:
        # The lock takes its time to confirm the removal; the old code works meanwhile.
        await lock.post("/_sandbox/faults", json={"removing_delay_ms": 3000})

    async with tls.channel(f"127.0.0.1:{platform.booking.grpc_port}") as channel:
        stub = booking_pb2_grpc.BookingServiceStub(channel)
        await stub.CancelBooking(
            bpb.CancelBookingRequest(
                org_id=booking.org_id,
                user="anna",
                idempotency_key=f"cancel-{booking.booking_id}",
                booking_id=booking.booking_id,
            )
        )
    assert await _slot_state(platform, booking) == "closed"

    async def reopened() -> bool:
        state = await _slot_state(platform, booking)
        if state != "available":
            assert state == "closed", state  # never sold while the old PIN may work
            return False
        return True

    async def removal_started() -> bool:
        async with httpx.AsyncClient(
            base_url=platform.lock_url, auth=SandboxAuth(), timeout=5
        ) as lock:
            codes = (await lock.get("/_sandbox/access_codes")).json()["data"]
        return any(code["status"] == "removing" for code in codes)

    await eventually(removal_started, 30)
    assert await _slot_state(platform, booking) == "closed"  # removing is not removed
    await eventually(reopened, 60)
    for at in (inside, inside + timedelta(minutes=30)):
        assert not await _opens(platform, access.pin, at)

    assert not any(access.pin.encode() in record for record in await _records_of(platform))
    assert access.pin not in caplog.text
