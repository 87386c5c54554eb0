"""The resources the gateway answers with: the contract's shapes, built from the services'
replies. The pydantic models document them in the OpenAPI document; the routes build plain
dicts (validating our own answers again on every request would only cost time)."""

from __future__ import annotations

from datetime import UTC
from typing import Any, Literal

from google.protobuf.timestamp_pb2 import Timestamp
from liftfit.access.v1 import access_pb2
from liftfit.booking.v1 import booking_pb2
from liftfit.payment.v1 import payment_pb2
from pydantic import BaseModel

from gateway_bff.store.directory import Member as DirectoryMember
from gateway_bff.times import rfc3339


class Money(BaseModel):
    amount: int
    currency: str


class SlotRef(BaseModel):
    slot_id: str
    space_id: str
    starts_at: str
    ends_at: str


class PaymentRef(BaseModel):
    payment_id: str
    state: str
    checkout_url: str | None = None


class AccessRef(BaseModel):
    state: Literal["planned", "active", "revoke_pending", "revoked", "failed"]
    valid_from: str | None
    valid_to: str | None


class Booking(BaseModel):
    booking_id: str
    org_id: str
    user: str
    state: Literal["pending", "confirmed", "cancelled", "expired"]
    slot: SlotRef
    party_size: int
    payment_mode: Literal["card", "pass"]
    price: Money
    payment: PaymentRef | None
    access: AccessRef | None
    created_at: str
    updated_at: str
    trace_id: str | None = None


class Access(AccessRef):
    pin: str | None = None


class Space(BaseModel):
    space_id: str
    name: str
    timezone: str


class Slot(BaseModel):
    slot_id: str
    space_id: str
    starts_at: str
    ends_at: str
    state: Literal["available", "held", "booked", "closed"]
    price: Money


class Plan(BaseModel):
    plan_code: str
    plan_version: int
    kind: Literal["pass", "subscription"]
    name: str
    price: Money
    entries: int
    period_days: int


class Order(BaseModel):
    order_id: str
    org_id: str
    state: Literal["pending", "paid", "cancelled", "failed"]
    plan_code: str
    plan_version: int
    price: Money
    payment: PaymentRef | None
    created_at: str


class PassEntry(BaseModel):
    delta: int
    reason: str
    at: str | None


class Passes(BaseModel):
    balance: int
    entries: list[PassEntry]


class Org(BaseModel):
    org_id: str
    name: str
    created_at: str


class Member(BaseModel):
    org_id: str
    user: str
    role: Literal["owner", "member"]
    email: str | None
    locale: str
    created_at: str


class OrgWithMembers(Org):
    members: list[Member]


class Span(BaseModel):
    """One span of a trace, as the console's waterfall draws it (times in microseconds)."""

    span_id: str
    parent_id: str | None
    service: str
    name: str
    start_us: int
    duration_us: int
    error: bool


class Trace(BaseModel):
    trace_id: str
    spans: list[Span]


class Me(BaseModel):
    user: str
    operator: bool
    memberships: list[Member]


class ProblemBody(BaseModel):
    type: str
    title: str
    status: int
    code: str
    detail: str | None = None


def moment(stamp: Timestamp) -> str | None:
    """RFC 3339 in UTC; None for an unset time."""
    if not stamp.seconds and not stamp.nanos:
        return None
    return rfc3339(stamp.ToDatetime(tzinfo=UTC))


def member(m: DirectoryMember) -> dict[str, Any]:
    return {
        "org_id": m.org_id,
        "user": m.user,
        "role": m.role,
        "email": m.email,
        "locale": m.locale,
        "created_at": rfc3339(m.created_at),
    }


def money(value: Any) -> dict[str, Any]:
    return {"amount": int(value.amount), "currency": value.currency}


def booking(
    b: booking_pb2.Booking,
    payment: payment_pb2.Payment | None,
    access: access_pb2.Access | None,
) -> dict[str, Any]:
    return {
        "booking_id": b.booking_id,
        "org_id": b.org_id,
        "user": b.user,
        "state": b.state,
        "slot": {
            "slot_id": b.slot.slot_id,
            "space_id": b.slot.space_id,
            "starts_at": moment(b.slot.starts_at),
            "ends_at": moment(b.slot.ends_at),
        },
        "party_size": b.party_size,
        "payment_mode": b.payment_mode,
        "price": money(b.price),
        "payment": payment_ref(payment),
        "access": access_ref(access),
        "created_at": moment(b.created_at),
        "updated_at": moment(b.updated_at),
        "trace_id": b.trace_id or None,
    }


def payment_ref(p: payment_pb2.Payment | None) -> dict[str, Any] | None:
    if p is None or not p.payment_id:
        return None
    return {"payment_id": p.payment_id, "state": p.state, "checkout_url": p.checkout_url or None}


def access_ref(a: access_pb2.Access | None) -> dict[str, Any] | None:
    if a is None or not a.state:
        return None
    return {"state": a.state, "valid_from": moment(a.valid_from), "valid_to": moment(a.valid_to)}


def access(a: access_pb2.Access) -> dict[str, Any]:
    shown = access_ref(a) or {}
    return {**shown, "pin": a.pin or None}


def space(s: booking_pb2.Space) -> dict[str, Any]:
    return {"space_id": s.space_id, "name": s.name, "timezone": s.timezone}


def slot(s: booking_pb2.Slot) -> dict[str, Any]:
    return {
        "slot_id": s.slot_id,
        "space_id": s.space_id,
        "starts_at": moment(s.starts_at),
        "ends_at": moment(s.ends_at),
        "state": s.state,
        "price": money(s.price),
    }


def plan(p: payment_pb2.Plan) -> dict[str, Any]:
    return {
        "plan_code": p.plan_code,
        "plan_version": p.plan_version,
        "kind": p.kind,
        "name": p.name,
        "price": money(p.price),
        "entries": p.entries,
        "period_days": p.period_days,
    }


def order(o: payment_pb2.Order) -> dict[str, Any]:
    return {
        "order_id": o.order_id,
        "org_id": o.org_id,
        "state": o.state,
        "plan_code": o.plan_code,
        "plan_version": o.plan_version,
        "price": money(o.price),
        "payment": payment_ref(o.payment) if o.HasField("payment") else None,
        "created_at": moment(o.created_at),
    }


def passes(p: booking_pb2.PassBalance) -> dict[str, Any]:
    entries = [{"delta": e.delta, "reason": e.reason, "at": moment(e.at)} for e in p.entries]
    return {"balance": p.balance, "entries": entries}
