"""A running booking service for tests: real PostgreSQL, real Kafka, real gRPC."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
from aiokafka import AIOKafkaProducer
from google.protobuf.message import Message
from liftfit.booking.v1 import booking_pb2 as pb
from liftfit.booking.v1 import events_pb2 as ev
from liftfit.payment.v1 import events_pb2 as pay
from sqlalchemy import select

from servicekit import envelope
from servicekit.grpc_server import reason_of
from servicekit.protobuf import timestamp
from services.booking.adapters import orm
from services.booking.bootstrap import BookingApp
from tests.support import waiting

if TYPE_CHECKING:  # the async stub exists only in the type stubs
    from liftfit.booking.v1.booking_pb2_grpc import BookingServiceAsyncStub

T = TypeVar("T")
TOPICS = {
    "booking.events": 3,
    "payment.events": 3,
    "access.events": 3,
    "payment.events.dlq": 1,
    "access.events.dlq": 1,
}


def new_id() -> str:
    return str(uuid.uuid4())


def new_key() -> str:
    return f"key-{uuid.uuid4().hex}"


@dataclass
class BookingHarness:
    app: BookingApp
    stub: BookingServiceAsyncStub
    channel: grpc.aio.Channel
    producer: AIOKafkaProducer
    start_at: datetime = field(
        default_factory=lambda: (
            # Slots are sold only before they start: always some weeks ahead of now.
            datetime.now(UTC).replace(hour=6, minute=0, second=0, microsecond=0)
            + timedelta(days=30 + uuid.uuid4().int % 300)
        )
    )
    stopped: bool = False

    async def stop(self) -> None:
        """Stops the service once; a test may stop it early to simulate downtime."""
        if self.stopped:
            return
        self.stopped = True
        await self.channel.close(grace=None)
        await self.producer.stop()
        await self.app.stop()

    async def space_with_slots(
        self, count: int, amount: int = 45000, start_at: datetime | None = None
    ) -> list[pb.Slot]:
        """A fresh space with `count` consecutive hour-long slots, from `start_at` if given."""
        first = start_at or self.start_at
        space = await self.stub.CreateSpace(pb.CreateSpaceRequest(name=new_id(), timezone="UTC"))
        new_slots = [
            pb.NewSlot(
                starts_at=timestamp(first + timedelta(hours=i)),
                ends_at=timestamp(first + timedelta(hours=i + 1)),
                price=ev.Money(amount=amount, currency="CZK"),
            )
            for i in range(count)
        ]
        created = await self.stub.CreateSlots(
            pb.CreateSlotsRequest(space_id=space.space_id, slots=new_slots)
        )
        return list(created.slots)

    async def checkout(
        self,
        slot_id: str,
        org_id: str,
        key: str | None = None,
        user: str = "alice",
        party_size: int = 2,
        payment_mode: str = "card",
    ) -> pb.BookingReply:
        request = pb.CheckoutRequest(
            org_id=org_id,
            user=user,
            idempotency_key=key or new_key(),
            slot_id=slot_id,
            party_size=party_size,
            payment_mode=payment_mode,
        )
        return await self.stub.Checkout(request)

    async def booking(self, org_id: str, booking_id: str) -> pb.Booking:
        return await self.stub.GetBooking(
            pb.GetBookingRequest(org_id=org_id, booking_id=booking_id)
        )

    async def slot(self, slot: pb.Slot) -> pb.Slot:
        found = await self.stub.ListSlots(pb.ListSlotsRequest(space_id=slot.space_id))
        return next(s for s in found.slots if s.slot_id == slot.slot_id)

    async def cancel(self, org_id: str, booking_id: str, user: str = "alice") -> pb.BookingReply:
        request = pb.CancelBookingRequest(
            org_id=org_id, user=user, idempotency_key=new_key(), booking_id=booking_id
        )
        return await self.stub.CancelBooking(request)

    async def reschedule(
        self, org_id: str, booking_id: str, new_slot_id: str, key: str | None = None
    ) -> pb.BookingReply:
        request = pb.RescheduleBookingRequest(
            org_id=org_id,
            user="alice",
            idempotency_key=key or new_key(),
            booking_id=booking_id,
            new_slot_id=new_slot_id,
        )
        return await self.stub.RescheduleBooking(request)

    async def publish(self, topic: str, aggregate_id: str, event: Message) -> str:
        """Publishes an event as another service's relay would; returns its event id."""
        event_id = uuid.uuid4()
        wrapped = envelope.wrap(event, aggregate_id, "test", {}, event_id)
        headers = [("event-id", str(event_id).encode()), ("dispatch-generation", b"0")]
        await self.producer.send_and_wait(
            self.app.settings.topic(topic),
            value=wrapped.SerializeToString(),
            key=aggregate_id.encode(),
            headers=headers,
        )
        return str(event_id)

    async def consumed(self, event_id: str) -> None:
        """Waits until the service's inbox recorded the event, i.e. its effect committed."""
        t = orm.eventing.inbox.c

        async def recorded() -> bool:
            async with self.app.uows.sessions() as session:
                found = await session.execute(select(t.state).where(t.event_id == event_id))
                return found.first() is not None

        await eventually(recorded)

    async def pay(self, booking_id: str, payment_id: str, amount: int = 45000) -> None:
        """The payment service announcing that a booking's payment succeeded."""
        paid = pay.PaymentSucceeded(
            payment_id=payment_id,
            booking_id=booking_id,
            amount=pay.Money(amount=amount, currency="CZK"),
        )
        await self.publish("payment.events", payment_id, paid)

    async def published(self, kind: type[T]) -> list[T]:
        """The booking events of one type in the outbox, oldest first."""
        name = kind.DESCRIPTOR.full_name  # type: ignore[attr-defined]
        t = orm.eventing.outbox.c
        async with self.app.uows.sessions() as session:
            rows = await session.execute(
                select(t.payload).where(t.event_type == name).order_by(t.seq)
            )
            return [envelope.unpack(envelope.parse(row.payload)) for row in rows]  # type: ignore[misc]


async def eventually(check: Callable[[], Awaitable[T | None]], timeout_s: float = 20.0) -> T:
    """Polls until `check` returns something truthy; the consumer is asynchronous."""
    return await waiting.eventually(check, timeout_s)


async def reason_of_call(call: Awaitable[Any]) -> str:
    """The domain reason a call failed with; fails the test if it succeeded."""
    try:
        await call
    except grpc.aio.AioRpcError as error:
        return reason_of(error) or error.code().name
    raise AssertionError("the call succeeded")
