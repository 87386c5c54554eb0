"""The walking skeleton across the services on the real broker, and the one trace that
follows it: gRPC call -> booking transaction and outbox -> relay -> Kafka -> payment inbox.
It ends where the customer sees it: the confirmation and the access mail with the PIN,
readable in the mail sandbox."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import httpx
from google.protobuf.timestamp_pb2 import Timestamp
from liftfit.access.v1 import access_pb2 as apb
from liftfit.access.v1 import access_pb2_grpc
from liftfit.booking.v1 import booking_pb2 as bpb
from liftfit.booking.v1 import booking_pb2_grpc, events_pb2
from liftfit.payment.v1 import payment_pb2 as ppb
from liftfit.payment.v1 import payment_pb2_grpc
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from tests.e2e.conftest import Platform
from tests.support import tls
from tests.support.sandboxes import SandboxAuth
from tests.support.waiting import eventually


def _at(moment: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


async def _card_checkout(platform: Platform, email: str = "", locale: str = "") -> bpb.Booking:
    async with tls.channel(f"127.0.0.1:{platform.booking.grpc_port}") as channel:
        booking = booking_pb2_grpc.BookingServiceStub(channel)
        space = await booking.CreateSpace(bpb.CreateSpaceRequest(name="Karlin", timezone="UTC"))
        starts = datetime.now(UTC).replace(microsecond=0) + timedelta(days=2)
        slots = await booking.CreateSlots(
            bpb.CreateSlotsRequest(
                space_id=space.space_id,
                slots=[
                    bpb.NewSlot(
                        starts_at=_at(starts),
                        ends_at=_at(starts + timedelta(hours=1)),
                        price=events_pb2.Money(amount=45000, currency="CZK"),
                    )
                ],
            )
        )
        reply = await booking.Checkout(
            bpb.CheckoutRequest(
                org_id=str(uuid.uuid4()),
                user="anna",
                idempotency_key=uuid.uuid4().hex,
                slot_id=slots.slots[0].slot_id,
                party_size=1,
                payment_mode="card",
                contact=events_pb2.Contact(email=email, locale=locale),
            )
        )
        return reply.booking


async def _payment_of(platform: Platform, booking_id: str) -> ppb.Payment:
    async with tls.channel(f"127.0.0.1:{platform.payment.grpc_port}") as channel:
        payments = payment_pb2_grpc.PaymentServiceStub(channel)
        for _ in range(200):
            try:
                return await payments.GetPaymentForBooking(
                    ppb.GetPaymentForBookingRequest(booking_id=booking_id)
                )
            except grpc.aio.AioRpcError as error:
                if error.code() != grpc.StatusCode.NOT_FOUND:
                    raise
            await asyncio.sleep(0.1)
    raise AssertionError("the payment service never wrote a payment for the booking")


async def _pay(platform: Platform, booking_id: str) -> None:
    async with tls.channel(f"127.0.0.1:{platform.payment.grpc_port}") as channel:
        payments = payment_pb2_grpc.PaymentServiceStub(channel)

        async def at_gateway() -> str | None:
            try:
                found = await payments.GetPaymentForBooking(
                    ppb.GetPaymentForBookingRequest(booking_id=booking_id)
                )
            except grpc.aio.AioRpcError:
                return None
            return found.provider_payment_id or None

        provider_id = await eventually(at_gateway, 30)
    async with httpx.AsyncClient(
        base_url=platform.gateway_url, auth=SandboxAuth(), timeout=10
    ) as gateway:
        settle = f"/_sandbox/payments/{provider_id}/settle"
        (await gateway.post(settle, json={"outcome": "succeed"})).raise_for_status()


async def test_a_card_checkout_reaches_the_payment_service_through_the_outbox_and_broker(
    platform: Platform,
) -> None:
    booking = await _card_checkout(platform)
    assert booking.state == "pending"
    payment = await _payment_of(platform, booking.booking_id)
    assert (payment.amount.amount, payment.amount.currency) == (45000, "CZK")
    assert payment.booking_id == booking.booking_id


async def test_one_trace_follows_the_checkout_from_the_grpc_call_to_the_payment_consumer(
    platform: Platform, span_exporter: InMemorySpanExporter
) -> None:
    span_exporter.clear()
    booking = await _card_checkout(platform)
    await _payment_of(platform, booking.booking_id)
    topic = f"{platform.prefix}booking.events"

    def finished() -> list[Any]:
        return list(span_exporter.get_finished_spans())

    async def payment_consumed() -> list[Any] | None:
        spans = finished()
        done = any(
            s.name == f"consume {topic}" and (s.attributes or {}).get("consumer") == "payment"
            for s in spans
        )
        return spans if done else None

    spans = await eventually(payment_consumed, 10)
    [client] = [s for s in spans if s.kind == SpanKind.CLIENT and s.name.endswith("/Checkout")]
    trace_id = client.context.trace_id
    in_trace = [s for s in spans if s.context.trace_id == trace_id]
    kinds = {(s.kind, s.name) for s in in_trace}
    assert (SpanKind.SERVER, "/liftfit.booking.v1.BookingService/Checkout") in kinds
    # The record carries the context booking wrote its row in: payment's consume span is a
    # child of a span of the checkout in this trace, and the relay's batch span links to it.
    written = {s.context.span_id for s in in_trace if s.kind != SpanKind.CONSUMER}
    consumers = [
        s for s in in_trace if s.kind == SpanKind.CONSUMER and s.name == f"consume {topic}"
    ]
    payment = [s for s in consumers if (s.attributes or {}).get("consumer") == "payment"]
    assert payment and all(s.parent and s.parent.span_id in written for s in payment)
    published = [
        s for s in finished() if (s.kind, s.name) == (SpanKind.PRODUCER, f"{topic} publish")
    ]
    linked = {link.context.span_id for s in published for link in s.links}
    assert {s.parent.span_id for s in payment if s.parent} <= linked
    assert booking.trace_id in ("", format(trace_id, "032x"))


async def test_a_paid_checkout_ends_with_its_confirmation_and_access_mails_in_the_sandbox(
    platform: Platform,
) -> None:
    email = f"anna-{uuid.uuid4().hex[:8]}@example.test"
    booking = await _card_checkout(platform, email, "en")
    await _pay(platform, booking.booking_id)

    async with httpx.AsyncClient(base_url=platform.mail.url, timeout=5) as mail:

        async def both_mails() -> list[dict[str, Any]] | None:
            found = (await mail.get("/messages", params={"to": email})).json()["data"]
            return found if len(found) == 2 else None

        mails = await eventually(both_mails, 60)
    by_subject = {m["subject"].split(":")[0].split(" for ")[0]: m for m in mails}
    assert set(by_subject) == {"Booking confirmed", "Your studio PIN"}
    confirmation = by_subject["Booking confirmed"]
    assert booking.booking_id in confirmation["text"] and "CZK450.00" in confirmation["text"]
    access = await _access_of(platform, booking)
    assert access.pin and access.pin in by_subject["Your studio PIN"]["text"]
    assert access.pin in by_subject["Your studio PIN"]["html"]


async def _access_of(platform: Platform, booking: bpb.Booking) -> apb.Access:
    async with tls.channel(f"127.0.0.1:{platform.access.grpc_port}") as channel:
        request = apb.DisclosePinRequest(
            org_id=booking.org_id,
            booking_id=booking.booking_id,
            user="anna",
            purpose="customer_view",
        )
        found: apb.Access = await access_pb2_grpc.AccessServiceStub(channel).DisclosePin(request)
        return found
