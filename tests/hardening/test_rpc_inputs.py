"""Every RPC of both services, driven over real gRPC with generated hostile field values.

Each example sends one request to every RPC. Every answer must be OK, INVALID_ARGUMENT or
a domain status with its reason in the trailing metadata; never UNKNOWN, INTERNAL or
RESOURCE_EXHAUSTED, and no message may carry SQL, a bound value, a class name or more
than 300 characters (see hostile.answered_deliberately). What a write accepted must be
sane: ISO 4217 money of 1 to 100,000,000 minor units, slots of at most a day between 2000
and 2099, IANA zones, bounded plans. The operator's findings follow, one call each.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from liftfit.booking.v1 import booking_pb2 as bpb
from liftfit.booking.v1 import events_pb2 as bev
from liftfit.payment.v1 import events_pb2 as pev
from liftfit.payment.v1 import payment_pb2 as ppb

from services.payment.domain.signature import sign
from tests.booking.harness import BookingHarness, new_id
from tests.hardening.hostile import (
    INT64_MAX,
    INT64_MIN,
    TIMESTAMP_MAX_S,
    TIMESTAMP_MIN_S,
    answered_deliberately,
    hostile_bytes,
    hostile_text,
    int32s,
    int64s,
    refused_deliberately,
    text_or_hostile,
    timestamps,
)
from tests.payment.harness import SECRETS, Harness, notification_body, trailing

Calls = list[tuple[str, Message]]
WRITES = {"CreateSpace", "CreateSlots", "SetSlotPrice", "CreatePlan"}
FUZZ = settings(
    max_examples=60,  # about 20 s for the file on the busy development machine
    deadline=None,
    database=None,  # no example database: every run starts afresh, in CI too
    # No shrinking: an example is a dozen RPCs on a real database, and shrinking one took
    # minutes; a failure names the RPC and prints every drawn request as it is.
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
CALL_TIMEOUT_S = 15


async def _send_all(stub: Any, calls: Calls) -> None:
    for rpc, request in calls:
        call = getattr(stub, rpc)(request, timeout=CALL_TIMEOUT_S)
        try:
            await answered_deliberately(request, call, writes=rpc in WRITES)
        except AssertionError as failure:
            raise AssertionError(f"{rpc}: {failure}") from None


# --- the booking service -------------------------------------------------------------------


@dataclass(frozen=True)
class BookingWorld:
    """Real rows for requests to name: a space, its slots, an organisation's booking."""

    stub: Any
    org_id: str
    space_id: str
    slot_ids: tuple[str, ...]
    booking_id: str
    around_s: int


@pytest.fixture
async def booking_world(booking: BookingHarness) -> BookingWorld:
    slots = await booking.space_with_slots(3)
    org_id = new_id()
    reply = await booking.checkout(slots[0].slot_id, org_id)
    return BookingWorld(
        booking.stub,
        org_id,
        slots[0].space_id,
        tuple(s.slot_id for s in slots),
        reply.booking.booking_id,
        int(booking.start_at.timestamp()),
    )


def _optional(strategy: st.SearchStrategy[Timestamp]) -> st.SearchStrategy[Timestamp | None]:
    return st.one_of(st.none(), strategy)


@st.composite
def _new_slot(draw: st.DrawFn, around_s: int) -> bpb.NewSlot:
    starts = draw(_optional(timestamps(around_s + 400 * 86_400)))
    if starts is not None and draw(st.booleans()):
        later = starts.seconds + int(timedelta(hours=draw(st.integers(-1, 30))).total_seconds())
        ends: Timestamp | None = Timestamp(
            seconds=min(max(later, INT64_MIN), INT64_MAX), nanos=starts.nanos
        )
    else:
        ends = draw(_optional(timestamps(around_s + 400 * 86_400)))
    price = draw(_money(bev.Money))
    return bpb.NewSlot(starts_at=starts, ends_at=ends, price=price)


def _money(kind: Callable[..., Message]) -> st.SearchStrategy[Any]:
    currency = text_or_hostile("CZK", "EUR", "ÄÖÜ", "czk", "XXX", "XTS", "ZZZ")
    return st.builds(kind, amount=int64s(45_000), currency=currency)


@st.composite
def _booking_calls(draw: st.DrawFn, world: BookingWorld) -> Calls:
    org = text_or_hostile(world.org_id)
    user = text_or_hostile("alice", "anna")
    key = text_or_hostile("key-1", "checkout.2026:01_a-b")
    slot = text_or_hostile(*world.slot_ids)
    booked = text_or_hostile(world.booking_id)
    space = text_or_hostile(world.space_id)
    moment = timestamps(world.around_s)
    return [
        ("ListSpaces", bpb.ListSpacesRequest()),
        (
            "ListSlots",
            bpb.ListSlotsRequest(
                space_id=draw(space),
                **{"from": draw(_optional(moment)), "to": draw(_optional(moment))},
            ),
        ),
        (
            "Checkout",
            bpb.CheckoutRequest(
                org_id=draw(org),
                user=draw(user),
                idempotency_key=draw(key),
                slot_id=draw(slot),
                party_size=draw(int32s(1, 4)),
                payment_mode=draw(text_or_hostile("card", "pass", "CARD")),
                contact=bev.Contact(email=draw(_email), locale=draw(_locale)),
            ),
        ),
        ("GetBooking", bpb.GetBookingRequest(org_id=draw(org), booking_id=draw(booked))),
        ("ListBookings", bpb.ListBookingsRequest(org_id=draw(org))),
        (
            "CancelBooking",
            bpb.CancelBookingRequest(
                org_id=draw(org),
                user=draw(user),
                idempotency_key=draw(key),
                booking_id=draw(booked),
            ),
        ),
        (
            "RescheduleBooking",
            bpb.RescheduleBookingRequest(
                org_id=draw(org),
                user=draw(user),
                idempotency_key=draw(key),
                booking_id=draw(booked),
                new_slot_id=draw(slot),
            ),
        ),
        ("GetPassBalance", bpb.GetPassBalanceRequest(org_id=draw(org))),
        (
            "CreateSpace",
            bpb.CreateSpaceRequest(
                name=draw(text_or_hostile("Karlin", "Studio 1")),
                timezone=draw(text_or_hostile("UTC", "Europe/Prague", "Mars/Olympus", "utc")),
            ),
        ),
        (
            "CreateSlots",
            bpb.CreateSlotsRequest(
                space_id=draw(space),
                slots=draw(st.lists(_new_slot(world.around_s), max_size=3)),
            ),
        ),
        ("CloseSlot", bpb.CloseSlotRequest(slot_id=draw(slot))),
        (
            "SetSlotPrice",
            bpb.SetSlotPriceRequest(slot_id=draw(slot), price=draw(_money(bev.Money))),
        ),
    ]


_email = text_or_hostile("", "anna@example.test", "a@b\r\nBcc: x@example.test", "@", "a@b")
_locale = text_or_hostile("", "cs", "en", "de", "EN")


@FUZZ
@given(data=st.data())
async def test_every_booking_rpc_answers_hostile_input_deliberately(
    booking_world: BookingWorld, data: st.DataObject
) -> None:
    calls = data.draw(_booking_calls(booking_world))
    assert {rpc for rpc, _ in calls} == set(
        bpb.DESCRIPTOR.services_by_name["BookingService"].methods_by_name
    )
    await _send_all(booking_world.stub, calls)


async def _refusal(stub: Any, rpc: str, request: Message) -> tuple[str, str]:
    """The reason and field of a refused call, after the checks every answer must pass."""
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await getattr(stub, rpc)(request, timeout=CALL_TIMEOUT_S)
    reason = refused_deliberately(request, refused.value)
    return reason, trailing(refused.value).get("field", "")


def _at(seconds: int) -> Timestamp:
    return Timestamp(seconds=seconds)


async def test_the_operators_hostile_booking_calls_are_refused_naming_the_field(
    booking_world: BookingWorld,
) -> None:
    """What the operator's 464 calls found, one call each: every one a validation_error."""
    slot_id, soon = booking_world.slot_ids[1], booking_world.around_s
    ok_price = bev.Money(amount=45_000, currency="CZK")
    one_slot = bpb.NewSlot(starts_at=_at(soon), ends_at=_at(soon + 3600), price=ok_price)
    calls: list[tuple[str, Message, str]] = [
        (
            "ListSlots",
            bpb.ListSlotsRequest(space_id=f"urn:uuid:{booking_world.space_id}"),
            "space_id",
        ),
        (
            "Checkout",
            bpb.CheckoutRequest(
                org_id=booking_world.org_id,
                user="ann",
                idempotency_key="k",
                slot_id=slot_id,
                party_size=1,
                payment_mode="card",
                contact=bev.Contact(email="anna@example.test\r\nBcc: eve@example.test"),
            ),
            "contact.email",
        ),
        (
            "Checkout",
            bpb.CheckoutRequest(
                org_id=booking_world.org_id,
                user="ann",
                idempotency_key="k",
                slot_id=slot_id,
                party_size=1,
                payment_mode="card",
                contact=bev.Contact(email="anna@example.test", locale="de"),
            ),
            "contact.locale",
        ),
        (
            "GetBooking",
            bpb.GetBookingRequest(
                org_id=booking_world.org_id, booking_id="1-2345678-1234-1234-1234-123456789abc"
            ),
            "booking_id",
        ),
        (
            "GetBooking",
            bpb.GetBookingRequest(org_id=booking_world.org_id, booking_id="b" * 10_000),
            "booking_id",
        ),
        ("CloseSlot", bpb.CloseSlotRequest(slot_id="9" * 5_000), "slot_id"),
        (
            "Checkout",
            bpb.CheckoutRequest(
                org_id=booking_world.org_id,
                user="ann\x00",
                idempotency_key="k",
                slot_id=slot_id,
                party_size=1,
                payment_mode="card",
            ),
            "user",
        ),
        (
            "Checkout",
            bpb.CheckoutRequest(
                org_id=booking_world.org_id,
                user="ann",
                idempotency_key="k",
                slot_id=slot_id,
                party_size=5,
                payment_mode="card",
            ),
            "party_size",
        ),
        (
            "ListSlots",
            bpb.ListSlotsRequest(space_id=booking_world.space_id, **{"from": _at(TIMESTAMP_MIN_S)}),
            "from",
        ),
        (
            "ListSlots",
            bpb.ListSlotsRequest(space_id=booking_world.space_id, to=_at(TIMESTAMP_MAX_S + 1)),
            "to",
        ),
        ("CreateSpace", bpb.CreateSpaceRequest(name="Karlin", timezone="Mars/Olympus"), "timezone"),
        ("CreateSpace", bpb.CreateSpaceRequest(name="Karl\x00in", timezone="UTC"), "name"),
        (
            "SetSlotPrice",
            bpb.SetSlotPriceRequest(
                slot_id=slot_id, price=bev.Money(amount=45_000, currency="ÄÖÜ")
            ),
            "price.currency",
        ),
        (
            "SetSlotPrice",
            bpb.SetSlotPriceRequest(slot_id=slot_id, price=bev.Money(amount=0, currency="CZK")),
            "price.amount",
        ),
        (
            "SetSlotPrice",
            bpb.SetSlotPriceRequest(
                slot_id=slot_id, price=bev.Money(amount=2**63 - 1, currency="CZK")
            ),
            "price.amount",
        ),
        (
            "CreateSlots",
            bpb.CreateSlotsRequest(
                space_id=booking_world.space_id,
                slots=[
                    bpb.NewSlot(
                        starts_at=_at(TIMESTAMP_MIN_S), ends_at=_at(TIMESTAMP_MAX_S), price=ok_price
                    )
                ],
            ),
            "starts_at",
        ),
        (
            "CreateSlots",
            bpb.CreateSlotsRequest(
                space_id=booking_world.space_id,
                slots=[
                    bpb.NewSlot(starts_at=_at(soon), ends_at=_at(soon + 25 * 3600), price=ok_price)
                ],
            ),
            "slot",
        ),
        (
            "CreateSlots",
            bpb.CreateSlotsRequest(space_id=booking_world.space_id, slots=[one_slot] * 2_001),
            "slots",
        ),
    ]
    for rpc, request, field in calls:
        assert await _refusal(booking_world.stub, rpc, request) == ("validation_error", field), rpc


# --- the payment service -------------------------------------------------------------------


@dataclass(frozen=True)
class PaymentWorld:
    """Real rows for requests to name: a plan, an order and its payment, a booking's payment."""

    stub: Any
    plan_code: str
    org_id: str
    order_id: str
    payment_ids: tuple[str, ...]
    provider_payment_id: str
    booking_id: str


@pytest.fixture
async def payment_world(harness: Harness) -> PaymentWorld:
    code = f"pass-{new_id()[:8]}"
    price = pev.Money(amount=99_000, currency="CZK")
    plan = ppb.Plan(plan_code=code, plan_version=1, kind="pass", name=code, price=price, entries=10)
    await harness.stub.CreatePlan(ppb.CreatePlanRequest(plan=plan))
    org_id = new_id()
    order = await harness.stub.CreateOrder(
        ppb.CreateOrderRequest(
            org_id=org_id, user="anna", idempotency_key="k1", plan_code=code, plan_version=1
        )
    )
    paid_for = await harness.opened_payment()
    return PaymentWorld(
        harness.stub,
        code,
        org_id,
        order.order.order_id,
        (order.order.payment.payment_id, paid_for.payment_id),
        paid_for.provider_payment_id,
        paid_for.booking_id,
    )


@st.composite
def _notification(draw: st.DrawFn, world: PaymentWorld) -> ppb.HandleNotificationRequest:
    """Random bytes, or a notification naming any payment id, signed well or badly."""
    if draw(st.booleans()):
        named = draw(text_or_hostile(world.provider_payment_id))
        reference = draw(text_or_hostile(*world.payment_ids))
        body = notification_body(named, draw(text_or_hostile("paid", "failed")), reference)
    elif draw(st.booleans()):
        document = {
            "id": draw(hostile_text()),
            "data": {"payment_id": draw(st.integers() | st.floats())},
        }
        body = json.dumps(document).encode()
    else:
        body = draw(hostile_bytes())
    if draw(st.booleans()):
        header = sign(body, SECRETS, int(time.time()) - draw(st.sampled_from([0, 0, 299, 301])))
    else:
        header = draw(hostile_text())
    return ppb.HandleNotificationRequest(raw_body=body, signature_header=header)


@st.composite
def _payment_calls(draw: st.DrawFn, world: PaymentWorld) -> Calls:
    org = text_or_hostile(world.org_id)
    code = text_or_hostile(world.plan_code, f" {world.plan_code.upper()} ", "team")
    state = text_or_hostile("", "pending", "paid", "open", "resolved", "PAID")
    return [
        (
            "CreateOrder",
            ppb.CreateOrderRequest(
                org_id=draw(org),
                user=draw(text_or_hostile("anna")),
                idempotency_key=draw(text_or_hostile("k1", "k2")),
                plan_code=draw(code),
                plan_version=draw(int32s(1)),
                contact=pev.Contact(email=draw(_email), locale=draw(_locale)),
            ),
        ),
        (
            "GetOrder",
            ppb.GetOrderRequest(org_id=draw(org), order_id=draw(text_or_hostile(world.order_id))),
        ),
        ("GetPayment", ppb.GetPaymentRequest(payment_id=draw(text_or_hostile(*world.payment_ids)))),
        (
            "GetPaymentForBooking",
            ppb.GetPaymentForBookingRequest(booking_id=draw(text_or_hostile(world.booking_id))),
        ),
        ("HandleNotification", draw(_notification(world))),
        ("ListPlans", ppb.ListPlansRequest()),
        (
            "CreatePlan",
            ppb.CreatePlanRequest(
                plan=ppb.Plan(
                    plan_code=draw(code),
                    plan_version=draw(int32s(1, 2)),
                    kind=draw(text_or_hostile("pass", "subscription")),
                    name=draw(text_or_hostile("Ten entries")),
                    price=draw(_money(pev.Money)),
                    entries=draw(int32s(10)),
                    period_days=draw(int32s(30)),
                )
            ),
        ),
        ("ListPayments", ppb.ListPaymentsRequest(state=draw(state))),
        ("ListIncidents", ppb.ListIncidentsRequest(state=draw(state))),
    ]


@FUZZ
@given(data=st.data())
async def test_every_payment_rpc_answers_hostile_input_deliberately(
    payment_world: PaymentWorld, data: st.DataObject
) -> None:
    calls = data.draw(_payment_calls(payment_world))
    assert {rpc for rpc, _ in calls} == set(
        ppb.DESCRIPTOR.services_by_name["PaymentService"].methods_by_name
    )
    await _send_all(payment_world.stub, calls)


async def test_the_operators_hostile_payment_calls_are_refused_naming_the_field(
    payment_world: PaymentWorld,
) -> None:
    """What the operator's calls found in the payment service, one call each."""
    price = pev.Money(amount=99_000, currency="CZK")

    def plan(**change: Any) -> ppb.CreatePlanRequest:
        fields = {"plan_code": "p", "plan_version": 1, "kind": "pass", "name": "P", "price": price}
        return ppb.CreatePlanRequest(plan=ppb.Plan(**{**fields, "entries": 10, **change}))

    org = payment_world.org_id
    calls: list[tuple[str, Message, str, str]] = [
        ("CreatePlan", plan(period_days=-1), "validation_error", "period_days"),
        (
            "CreatePlan",
            plan(price=pev.Money(amount=99_000, currency="ÄÖÜ")),
            "validation_error",
            "price.currency",
        ),
        (
            "CreatePlan",
            plan(price=pev.Money(amount=0, currency="CZK")),
            "validation_error",
            "price.amount",
        ),
        (
            "CreateOrder",
            ppb.CreateOrderRequest(
                org_id=org,
                user="anna",
                idempotency_key="k9",
                plan_code="p" * 10_000,
                plan_version=1,
            ),
            "validation_error",
            "plan_code",
        ),
        (
            "CreateOrder",
            ppb.CreateOrderRequest(
                org_id="bench-org",
                user="anna",
                idempotency_key="k9",
                plan_code=payment_world.plan_code,
                plan_version=1,
            ),
            "validation_error",
            "org_id",
        ),
        (
            "CreateOrder",
            ppb.CreateOrderRequest(
                org_id=org,
                user="anna",
                idempotency_key="k9\n",
                plan_code=payment_world.plan_code,
                plan_version=1,
            ),
            "invalid_idempotency_key",
            "idempotency_key",
        ),
        (
            "GetOrder",
            ppb.GetOrderRequest(org_id=org, order_id=f"urn:uuid:{payment_world.order_id}"),
            "validation_error",
            "order_id",
        ),
        (
            "GetPayment",
            ppb.GetPaymentRequest(payment_id=payment_world.payment_ids[0].upper()),
            "validation_error",
            "payment_id",
        ),
        (
            "GetPaymentForBooking",
            ppb.GetPaymentForBookingRequest(booking_id=f"bk-{payment_world.booking_id}"),
            "validation_error",
            "booking_id",
        ),
        ("ListPayments", ppb.ListPaymentsRequest(state="paid\x00"), "validation_error", "state"),
        ("ListIncidents", ppb.ListIncidentsRequest(state="closed"), "validation_error", "state"),
        (
            "HandleNotification",
            ppb.HandleNotificationRequest(raw_body=b"{" * 70_000, signature_header="t=1,v1=00"),
            "validation_error",
            "raw_body",
        ),
        (
            "HandleNotification",
            ppb.HandleNotificationRequest(raw_body=b"{}", signature_header="t=1\x00" * 3_000),
            "invalid_signature",
            "",
        ),
    ]
    for rpc, request, reason, field in calls:
        assert await _refusal(payment_world.stub, rpc, request) == (reason, field), rpc
