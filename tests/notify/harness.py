"""The notify service on real PostgreSQL, Kafka and the mail sandbox process.

The service runs as its process runs it (its own bootstrap(), its workers started): a test
publishes the events of booking, payment and access to its topics, and reads what came out
in the sandbox (by Message-ID), in its gRPC API and in its tables. The access service
behind it is a stand-in gRPC server (`PinDesk`) that answers DisclosePin with a PIN the
test chose, so a test knows which PIN to look for.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import httpx
from aiokafka import AIOKafkaProducer
from google.protobuf.message import Message
from liftfit.access.v1 import access_pb2, access_pb2_grpc
from liftfit.access.v1 import events_pb2 as aev
from liftfit.booking.v1 import events_pb2 as bev
from liftfit.notify.v1 import notify_pb2 as npb
from liftfit.payment.v1 import events_pb2 as pev
from sqlalchemy import func, select

from servicekit import envelope
from servicekit.protobuf import timestamp
from services.access.domain.errors import PinNotActive
from services.notify.adapters import orm
from services.notify.bootstrap import NotifyApp
from services.notify.domain.model import DeliveryState, message_id
from tests.support.sandboxes import MailSandbox
from tests.support.topics import PLATFORM_TOPICS
from tests.support.waiting import eventually

TOPICS = PLATFORM_TOPICS
PRODUCERS = {"booking.events": "booking", "payment.events": "payment", "access.events": "access"}
# States no send job leaves behind: sent, failed and unknown.
_SETTLED = (DeliveryState.SENT, DeliveryState.FAILED, DeliveryState.UNKNOWN)


def new_id() -> str:
    return str(uuid.uuid4())


def new_pin() -> str:
    return "".join(random.choice("0123456789") for _ in range(8))


@dataclass(frozen=True)
class Issued:
    grant_id: str
    pin: str
    valid_from: datetime
    valid_to: datetime


class PinDesk(access_pb2_grpc.AccessServiceServicer):
    """The access service's DisclosePin, answering with the PIN a test issued."""

    def __init__(self) -> None:
        self.issued: dict[str, Issued] = {}
        self.reads: list[tuple[str, str, str]] = []  # (booking, reader, purpose)

    # Only DisclosePin is asked for; the rest of the contract answers UNIMPLEMENTED.
    GetAccess = ListGrants = ListIncidents = ListDriftFindings = None  # type: ignore[assignment]

    async def DisclosePin(
        self, request: access_pb2.DisclosePinRequest, context: Any
    ) -> access_pb2.Access:
        self.reads.append((request.booking_id, request.user, request.purpose))
        found = self.issued.get(request.booking_id)
        if found is None:
            raise PinNotActive(request.booking_id, "revoked")
        return access_pb2.Access(
            booking_id=request.booking_id,
            state="active",
            grant_id=found.grant_id,
            pin=found.pin,
            valid_from=timestamp(found.valid_from),
            valid_to=timestamp(found.valid_to),
        )


@dataclass
class Booking:
    booking_id: str
    org_id: str
    email: str
    locale: str
    starts_at: datetime
    space_id: str = field(default_factory=new_id)

    @property
    def window(self) -> bev.AccessWindow:
        ends_at = self.starts_at + timedelta(hours=1)
        return bev.AccessWindow(valid_from=timestamp(self.starts_at), valid_to=timestamp(ends_at))

    @property
    def contact(self) -> bev.Contact:
        return bev.Contact(email=self.email, locale=self.locale)


def a_booking(locale: str = "cs") -> Booking:
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(days=3)
    return Booking(new_id(), new_id(), f"c-{uuid.uuid4().hex[:10]}@example.test", locale, start)


def confirmed(booking: Booking) -> bev.BookingConfirmed:
    return bev.BookingConfirmed(
        booking_id=booking.booking_id,
        org_id=booking.org_id,
        user="anna",
        slot_id=new_id(),
        window=booking.window,
        payment_mode="card",
        payment_id=new_id(),
        space_id=booking.space_id,
        contact=booking.contact,
        price=bev.Money(amount=123450, currency="CZK"),
    )


def cancelled(booking: Booking) -> bev.BookingCancelled:
    return bev.BookingCancelled(
        booking_id=booking.booking_id,
        slot_id=new_id(),
        payment_mode="card",
        refund_due=True,
        window=booking.window,
        contact=booking.contact,
        space_id=booking.space_id,
        org_id=booking.org_id,
    )


def activated(booking: Booking, grant_id: str) -> aev.AccessActivated:
    return aev.AccessActivated(booking_id=booking.booking_id, grant_id=grant_id)


def refunded(booking: Booking, payment_id: str) -> pev.PaymentRefunded:
    return pev.PaymentRefunded(
        payment_id=payment_id,
        booking_id=booking.booking_id,
        state="refunded",
        contact=pev.Contact(email=booking.email, locale=booking.locale),
        amount=pev.Money(amount=123450, currency="CZK"),
    )


def order_paid(order_id: str, email: str, locale: str = "en") -> pev.PaymentSucceeded:
    return pev.PaymentSucceeded(
        payment_id=new_id(),
        order_id=order_id,
        amount=pev.Money(amount=99000, currency="CZK"),
        contact=pev.Contact(email=email, locale=locale),
    )


@dataclass
class NotifyHarness:
    app: NotifyApp
    prefix: str
    mail: MailSandbox
    sandbox: httpx.AsyncClient
    desk: PinDesk
    producer: AIOKafkaProducer
    channel: grpc.aio.Channel
    stub: Any  # NotifyServiceStub on an aio channel; the generated stubs type the sync API
    event_ids: set[str] = field(default_factory=set)

    # --- the events of the other services, on their topics ------------------------------------

    def record(self, topic: str, key: str, event: Message, event_id: str = "") -> bytes:
        """The bytes of one event as its producer's relay sends them."""
        wrapped = envelope.wrap(
            event, key, PRODUCERS[topic], {}, uuid.UUID(event_id) if event_id else uuid.uuid4()
        )
        self.event_ids.add(wrapped.event_id)
        return wrapped.SerializeToString()

    async def send(self, topic: str, key: str, payload: bytes) -> None:
        await self.producer.send_and_wait(self.prefix + topic, payload, key=key.encode())

    async def publish(self, topic: str, key: str, event: Message) -> None:
        await self.send(topic, key, self.record(topic, key, event))

    async def all_consumed(self) -> bool:
        """Every event id sent so far has its inbox row."""
        inbox = orm.eventing.inbox
        async with self.app.deps.uows.sessions() as session:
            query = select(func.count()).select_from(inbox)
            return int((await session.execute(query)).scalar_one()) >= len(self.event_ids)

    # --- the access service -----------------------------------------------------------------

    def issue_pin(self, booking: Booking, grant_id: str) -> Issued:
        issued = Issued(
            grant_id, new_pin(), booking.starts_at, booking.starts_at + timedelta(hours=1)
        )
        self.desk.issued[booking.booking_id] = issued
        return issued

    # --- the notify service's API -------------------------------------------------------------

    async def deliveries_of(self, booking_id: str = "", order_id: str = "") -> list[npb.Delivery]:
        request = npb.ListDeliveriesRequest(booking_id=booking_id, order_id=order_id)
        return list((await self.stub.ListDeliveries(request)).deliveries)

    async def delivery(self, key: str) -> npb.Delivery:
        found: npb.Delivery = await self.stub.GetDelivery(npb.GetDeliveryRequest(delivery_key=key))
        return found

    async def delivery_in(self, key: str, state: str, within: float = 15) -> npb.Delivery:
        """The delivery once it is in `state`; in a settled one, once its job is over too."""

        async def reached() -> npb.Delivery | None:
            found = await self.delivery(key)
            return found if found.state == state and await self._job_over(found) else None

        return await eventually(reached, within)

    async def deliveries_when(
        self, booking_id: str, count: int, state: str, within: float = 20
    ) -> list[npb.Delivery]:
        """A booking's `count` deliveries once all are in `state` (and settled, as above)."""

        async def reached() -> list[npb.Delivery] | None:
            found = await self.deliveries_of(booking_id)
            done = [d for d in found if d.state == state and await self._job_over(d)]
            return found if len(found) == count and len(done) == count else None

        return await eventually(reached, within)

    async def _job_over(self, delivery: npb.Delivery) -> bool:
        # A send job writes its outcome, then marks its timer fired in a transaction of its
        # own (servicekit.timers): a settled delivery's job is over once that commits too.
        if delivery.state not in _SETTLED:
            return True
        return not await self.sends_pending(delivery.delivery_key)

    async def sends_pending(self, key: str) -> bool:
        timers = orm.eventing.timers
        async with self.app.deps.uows.sessions() as session:
            query = select(timers.c.timer_id).where(
                timers.c.aggregate_id == key, timers.c.state == "pending"
            )
            return (await session.execute(query)).first() is not None

    async def incidents(self, key: str) -> list[npb.Incident]:
        found = await self.stub.ListIncidents(npb.ListIncidentsRequest(state="open"))
        return [i for i in found.incidents if i.subject_id == key]

    # --- the mail sandbox ----------------------------------------------------------------------

    async def mails(self, key: str) -> list[dict[str, Any]]:
        answer = await self.sandbox.get("/messages", params={"message_id": message_id(key)})
        answer.raise_for_status()
        return list(answer.json()["data"])

    async def faults(self, **faults: Any) -> None:
        (await self.sandbox.post("/_sandbox/faults", json=faults)).raise_for_status()
