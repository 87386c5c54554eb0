"""What customers and the card provider do to the platform in the fault tests.

A customer checks out a slot by card and retries with the same idempotency key while the
booking service is unreachable, as a real client does; the provider settles the payment
once the payment service has created it at the gateway. Clients reconnect soon after a
refused connection, so a restarted service is used as soon as it listens.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any

import grpc
import httpx
from google.protobuf.timestamp_pb2 import Timestamp
from liftfit.booking.v1 import booking_pb2 as bpb
from liftfit.booking.v1 import booking_pb2_grpc, events_pb2
from liftfit.booking.v1 import events_pb2 as bev
from liftfit.payment.v1 import payment_pb2 as ppb
from liftfit.payment.v1 import payment_pb2_grpc

from tests.support import tls
from tests.support.health import FAST_RECONNECT
from tests.support.processes import ProcessPlatform, Sandbox
from tests.support.sandboxes import SandboxAuth

# A service being restarted, or a call cut by a kill: try again, the key makes it safe.
PASSING = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED}
)
RETRY_PAUSE_S = 0.2
CALL_TIMEOUT_S = 5.0


def _at(moment: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


@dataclass
class Customers:
    """gRPC clients of both services and an HTTP client of the sandbox's controls."""

    booking_target: str
    payment_target: str
    sandbox_url: str
    org_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    @classmethod
    def of(cls, platform: ProcessPlatform) -> Customers:
        return cls(platform.booking.grpc_target, platform.payment.grpc_target, platform.sandbox.url)

    @classmethod
    def at(cls, booking_port: int, payment_port: int, sandbox: Sandbox) -> Customers:
        return cls(f"127.0.0.1:{booking_port}", f"127.0.0.1:{payment_port}", sandbox.url)

    async def __aenter__(self) -> Customers:
        self._booking_channel = tls.bare_channel(self.booking_target, options=FAST_RECONNECT)
        self._payment_channel = tls.bare_channel(self.payment_target, options=FAST_RECONNECT)
        self.booking = booking_pb2_grpc.BookingServiceStub(self._booking_channel)
        self.payments = payment_pb2_grpc.PaymentServiceStub(self._payment_channel)
        self.sandbox = httpx.AsyncClient(base_url=self.sandbox_url, auth=SandboxAuth(), timeout=5)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.sandbox.aclose()
        await self._booking_channel.close(None)
        await self._payment_channel.close(None)

    async def open_slots(self, count: int) -> list[str]:
        """A new space with `count` one-hour slots, days ahead; their ids."""
        space = await self.booking.CreateSpace(
            bpb.CreateSpaceRequest(name=f"Fault {uuid.uuid4().hex[:6]}", timezone="UTC"),
            timeout=CALL_TIMEOUT_S,
        )
        first = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(days=3)
        reply = await self.booking.CreateSlots(
            bpb.CreateSlotsRequest(
                space_id=space.space_id,
                slots=[
                    bpb.NewSlot(
                        starts_at=_at(first + timedelta(hours=i)),
                        ends_at=_at(first + timedelta(hours=i, minutes=55)),
                        price=events_pb2.Money(amount=45000, currency="CZK"),
                    )
                    for i in range(count)
                ],
            ),
            timeout=CALL_TIMEOUT_S,
        )
        return [slot.slot_id for slot in reply.slots]

    async def checkout(self, slot_id: str, email: str = "") -> bpb.Booking:
        """A card checkout, retried under one idempotency key until the service answers;
        its mails go to `email` (none without one)."""
        request = bpb.CheckoutRequest(
            org_id=self.org_id,
            user="fault-tester",
            idempotency_key=uuid.uuid4().hex,
            slot_id=slot_id,
            party_size=1,
            payment_mode="card",
            contact=bev.Contact(email=email, locale="en"),
        )
        reply = await _until_answered(
            lambda: self.booking.Checkout(request, timeout=CALL_TIMEOUT_S)
        )
        booking: bpb.Booking = reply.booking
        return booking

    async def cancel(self, booking_id: str) -> bpb.Booking:
        """The customer cancels, retried under one idempotency key until the service answers."""
        request = bpb.CancelBookingRequest(
            org_id=self.org_id,
            user="fault-tester",
            idempotency_key=f"cancel-{booking_id}",
            booking_id=booking_id,
        )
        call = self.booking.CancelBooking
        reply = await _until_answered(lambda: call(request, timeout=CALL_TIMEOUT_S))
        booking: bpb.Booking = reply.booking
        return booking

    async def slot_state(self, slot: bpb.Slot) -> str:
        found = await self.booking.ListSlots(
            bpb.ListSlotsRequest(space_id=slot.space_id), timeout=CALL_TIMEOUT_S
        )
        return next(each.state for each in found.slots if each.slot_id == slot.slot_id)

    async def booking_of(self, booking_id: str) -> bpb.Booking:
        request = bpb.GetBookingRequest(org_id=self.org_id, booking_id=booking_id)
        found: bpb.Booking = await _until_answered(
            lambda: self.booking.GetBooking(request, timeout=CALL_TIMEOUT_S)
        )
        return found

    async def payment_at_gateway(self, booking_id: str) -> ppb.Payment | None:
        """The booking's payment once the gateway has it (it has a checkout URL), else None."""
        try:
            payment = await self.payments.GetPaymentForBooking(
                ppb.GetPaymentForBookingRequest(booking_id=booking_id), timeout=CALL_TIMEOUT_S
            )
        except grpc.aio.AioRpcError as error:
            if error.code() not in PASSING | {grpc.StatusCode.NOT_FOUND}:
                raise
            return None
        return payment if payment.checkout_url and payment.provider_payment_id else None

    async def payment_of(self, booking_id: str) -> ppb.Payment | None:
        """The booking's payment as the payment service has it, at the gateway yet or not."""
        while True:
            try:
                return await self.payments.GetPaymentForBooking(
                    ppb.GetPaymentForBookingRequest(booking_id=booking_id), timeout=CALL_TIMEOUT_S
                )
            except grpc.aio.AioRpcError as error:
                if error.code() == grpc.StatusCode.NOT_FOUND:
                    return None
                if error.code() not in PASSING:
                    raise
                await asyncio.sleep(RETRY_PAUSE_S)

    async def payment_by_id(self, payment_id: str) -> ppb.Payment:
        request = ppb.GetPaymentRequest(payment_id=payment_id)
        found: ppb.Payment = await _until_answered(
            lambda: self.payments.GetPayment(request, timeout=CALL_TIMEOUT_S)
        )
        return found

    async def pay(self, provider_payment_id: str) -> None:
        """The customer pays on the hosted page (the sandbox's shortcut for it)."""
        reply = await self.sandbox.post(
            f"/_sandbox/payments/{provider_payment_id}/settle", json={"outcome": "succeed"}
        )
        assert reply.status_code == 200, reply.text

    async def gateway_payments(self) -> list[dict[str, object]]:
        reply = await self.sandbox.get("/_sandbox/payments")
        reply.raise_for_status()
        rows: list[dict[str, object]] = reply.json()["data"]
        return rows


async def _until_answered(call: Callable[[], Awaitable[Any]]) -> Any:
    """The call's answer, tried again while the service is restarting or unreachable."""
    while True:
        try:
            return await call()
        except grpc.aio.AioRpcError as error:
            if error.code() not in PASSING:
                raise
            await asyncio.sleep(RETRY_PAUSE_S)
