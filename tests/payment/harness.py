"""Driving the real payment service as its neighbours do.

The booking service is played by a Kafka producer on booking.events; payment.events is
read back by a plain consumer; the HTTP gateway is played by a gRPC client, except for
the card gateway's notifications, which enter through the real HTTP gateway served in this
process (tests/support/notification_entry.py); the card gateway is the real sandbox
process, notifying that entry.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import grpc
import httpx
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from google.protobuf import timestamp_pb2
from google.protobuf.message import DecodeError, Message
from liftfit.booking.v1 import events_pb2 as booking
from liftfit.events.v1.envelope_pb2 import EventEnvelope
from liftfit.payment.v1 import events_pb2 as payment_events
from liftfit.payment.v1 import payment_pb2
from sqlalchemy import func, select

from servicekit import envelope
from servicekit.errors import error_info
from services.payment.bootstrap import PaymentApp
from services.payment.domain.signature import sign
from tests.support import waiting
from tests.support.notification_entry import NotificationEntry

T = TypeVar("T")
API_KEY = "sk_test_payment_suite"
SECRETS = ("whsec_new", "whsec_old")  # a rotation in progress: the gateway signs with both


async def eventually(check: Callable[[], Awaitable[T | None]], within: float = 10.0) -> T:
    """The first truthy result of `check`; fails the test when none comes in time."""
    return await waiting.eventually(check, within)


@dataclass
class PaymentEvents:
    """Everything the service published on payment.events, read from the broker."""

    consumer: AIOKafkaConsumer
    seen: list[tuple[str, Message]] = field(default_factory=list)
    # Delivery is at least once; consumers drop copies by event id, and so does this reader.
    event_ids: set[str] = field(default_factory=set)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for record in self.consumer:
            try:
                wrapped = envelope.parse(record.value or b"")
            except (ValueError, DecodeError):
                continue  # not the service's event: a test put it there
            if wrapped.event_id in self.event_ids:
                continue
            self.event_ids.add(wrapped.event_id)
            self.seen.append((wrapped.aggregate_id, envelope.unpack(wrapped)))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        await self.consumer.stop()

    def of(self, kind: type[Message], key: str) -> list[Any]:
        return [
            event for aggregate, event in self.seen if aggregate == key and isinstance(event, kind)
        ]

    async def published(
        self, kind: type[Message], key: str, count: int = 1, within: float = 10.0
    ) -> list[Any]:
        """The events of a kind once at least `count` arrived: the relay publishes after the
        database commit that a test observes, so an event may still be on its way."""

        async def arrived() -> list[Any] | None:
            found = self.of(kind, key)
            return found if len(found) >= count else None

        return await eventually(arrived, within)


@dataclass
class Harness:
    app: PaymentApp
    prefix: str
    gateway: httpx.AsyncClient  # the sandbox: provider API (authenticated) and /_sandbox
    stub: Any  # PaymentServiceStub on an aio channel; the generated stubs type the sync API
    channel: grpc.aio.Channel
    producer: AIOKafkaProducer
    events: PaymentEvents
    entry: NotificationEntry  # the HTTP gateway, where the card gateway's notifications enter
    notifications: httpx.AsyncClient = field(default_factory=httpx.AsyncClient)

    # --- the booking service's side -------------------------------------------------------

    async def publish(self, event: Message, booking_id: str) -> None:
        wrapped: EventEnvelope = envelope.wrap(event, booking_id, "booking", {}, uuid.uuid4())
        headers = [
            ("event-id", wrapped.event_id.encode()),
            ("event-type", wrapped.event_type.encode()),
        ]
        topic = f"{self.prefix}booking.events"
        await self.producer.send_and_wait(
            topic, wrapped.SerializeToString(), key=booking_id.encode(), headers=headers
        )

    async def request_payment(
        self, amount: int = 45000, currency: str = "CZK", booking_id: str = ""
    ) -> str:
        """A card checkout at the booking service; returns the booking id."""
        booking_id = booking_id or str(uuid.uuid4())
        hold = timestamp_pb2.Timestamp()
        hold.FromDatetime(datetime.now(UTC) + timedelta(minutes=15))
        event = booking.PaymentRequested(
            booking_id=booking_id,
            org_id=str(uuid.uuid4()),
            user="anna",
            price=booking.Money(amount=amount, currency=currency),
            slot_id=str(uuid.uuid4()),
            hold_expires_at=hold,
        )
        await self.publish(event, booking_id)
        return booking_id

    async def opened_payment(
        self, amount: int = 45000, currency: str = "CZK"
    ) -> payment_pb2.Payment:
        """A booking payment that the gateway has accepted (it has a checkout_url)."""
        booking_id = await self.request_payment(amount, currency)
        return await self.payment_when(booking_id, lambda p: bool(p.checkout_url))

    # --- the HTTP gateway's side ------------------------------------------------------------

    async def payment(self, booking_id: str) -> payment_pb2.Payment | None:
        request = payment_pb2.GetPaymentForBookingRequest(booking_id=booking_id)
        try:
            found: payment_pb2.Payment = await self.stub.GetPaymentForBooking(request)
            return found
        except grpc.aio.AioRpcError as error:
            if error.code() == grpc.StatusCode.NOT_FOUND:
                return None
            raise

    async def payment_when(
        self,
        booking_id: str,
        accept: Callable[[payment_pb2.Payment], bool],
        within: float = 10.0,
    ) -> payment_pb2.Payment:
        async def check() -> payment_pb2.Payment | None:
            found = await self.payment(booking_id)
            return found if found is not None and accept(found) else None

        return await eventually(check, within)

    async def payment_in(
        self, booking_id: str, state: str, within: float = 10.0
    ) -> payment_pb2.Payment:
        return await self.payment_when(booking_id, lambda p: p.state == state, within)

    async def incidents(self, subject_id: str) -> list[payment_pb2.Incident]:
        reply = await self.stub.ListIncidents(payment_pb2.ListIncidentsRequest(state="open"))
        return [i for i in reply.incidents if i.subject_id == subject_id]

    # --- the card gateway (sandbox) -----------------------------------------------------------

    async def settle(self, provider_payment_id: str, outcome: str = "succeed") -> None:
        url = f"/_sandbox/payments/{provider_payment_id}/settle"
        (await self.gateway.post(url, json={"outcome": outcome})).raise_for_status()

    async def faults(self, **faults: Any) -> None:
        (await self.gateway.post("/_sandbox/faults", json=faults)).raise_for_status()

    async def gateway_payments(self, reference: str | None = None) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = (await self.gateway.get("/_sandbox/payments")).json()["data"]
        return [r for r in rows if reference is None or r["reference"] == reference]

    async def gateway_payment(self, provider_payment_id: str) -> dict[str, Any]:
        response = await self.gateway.get(f"/v1/payments/{provider_payment_id}")
        data: dict[str, Any] = response.json()
        return data

    async def deliveries(self, provider_payment_id: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = (await self.gateway.get("/_sandbox/notifications")).json()[
            "data"
        ]
        return [r for r in rows if r["event"]["data"]["payment_id"] == provider_payment_id]

    async def notify(self, body: bytes, signature: str) -> httpx.Response:
        """Posts a notification to the HTTP gateway, as the card gateway would."""
        headers = {"Gateway-Signature": signature, "Content-Type": "application/json"}
        return await self.notifications.post(self.entry.url, content=body, headers=headers)

    async def notify_signed(
        self, body: bytes, secrets: tuple[str, ...] = SECRETS, at: int | None = None
    ) -> httpx.Response:
        return await self.notify(body, sign(body, secrets, int(time.time()) if at is None else at))

    # --- the payment database -------------------------------------------------------------------

    async def timers_of(self, kind: str, payment_id: str) -> int:
        t = self.app.tables.eventing.timers.c
        query = select(func.count()).where(t.kind == kind, t.aggregate_id == payment_id)
        async with self.app.sessions() as session:
            return int((await session.execute(query)).scalar_one())


def notification_body(provider_payment_id: str, state: str, reference: str = "") -> bytes:
    """A notification as the gateway words it; its state is only ever a hint."""
    document = {
        "id": f"evt_{uuid.uuid4().hex[:12]}",
        "type": "payment.updated",
        "created": int(time.time()),
        "data": {"payment_id": provider_payment_id, "reference": reference, "state": state},
    }
    return json.dumps(document, separators=(",", ":")).encode()


def trailing(error: grpc.aio.AioRpcError) -> dict[str, str]:
    """What a refused call says in its ErrorInfo: the reason and any named resource."""
    info = error_info(error)
    assert info is not None, f"{error.code()} carries no ErrorInfo"
    return {"reason": info.reason, **dict(info.metadata)}


__all__ = ["API_KEY", "SECRETS", "Harness", "eventually", "notification_body", "payment_events"]
