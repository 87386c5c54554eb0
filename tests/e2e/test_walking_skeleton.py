"""The walking skeleton across two services on the real broker, and the one trace that
follows it: gRPC call -> booking transaction and outbox -> relay -> Kafka -> payment inbox."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import grpc
from google.protobuf.timestamp_pb2 import Timestamp
from liftfit.booking.v1 import booking_pb2 as bpb
from liftfit.booking.v1 import booking_pb2_grpc, events_pb2
from liftfit.payment.v1 import payment_pb2 as ppb
from liftfit.payment.v1 import payment_pb2_grpc
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from servicekit import grpc_server
from tests.e2e.conftest import Platform


def _at(moment: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


async def _card_checkout(platform: Platform) -> bpb.Booking:
    async with grpc_server.channel(f"127.0.0.1:{platform.booking.grpc_port}") as channel:
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
            )
        )
        return reply.booking


async def _payment_of(platform: Platform, booking_id: str) -> ppb.Payment:
    async with grpc_server.channel(f"127.0.0.1:{platform.payment.grpc_port}") as channel:
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
    await asyncio.sleep(0.5)
    spans = span_exporter.get_finished_spans()
    [client] = [s for s in spans if s.kind == SpanKind.CLIENT and s.name.endswith("/Checkout")]
    trace_id = client.context.trace_id
    in_trace = [s for s in spans if s.context.trace_id == trace_id]
    topic = f"{platform.prefix}booking.events"
    kinds = {(s.kind, s.name) for s in in_trace}
    assert (SpanKind.SERVER, "/liftfit.booking.v1.BookingService/Checkout") in kinds
    assert (SpanKind.PRODUCER, f"outbox publish {topic}") in kinds
    consumers = [
        s for s in in_trace if s.kind == SpanKind.CONSUMER and s.name == f"consume {topic}"
    ]
    assert any((s.attributes or {}).get("consumer") == "payment" for s in consumers)
    assert booking.trace_id in ("", format(trace_id, "032x"))
