"""A member's bookings: book, read, cancel, move, and the door's PIN.

The booking service owns bookings and keys: the gateway checks the key's form and passes
it on with the organisation; the service stores the keyed hash per organisation and
operation, compares request fingerprints by value and serialises concurrent duplicates.
A replay comes back marked, and leaves with `Idempotent-Replayed: true`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from liftfit.access.v1 import access_pb2 as apb
from liftfit.booking.v1 import booking_pb2 as bpb
from liftfit.booking.v1 import events_pb2 as bev
from liftfit.payment.v1 import payment_pb2 as ppb
from prometheus_client import Counter

from gateway_bff import bodies, resources
from gateway_bff.booking_cache import Kept
from gateway_bff.docs import ANSWERS, answer
from gateway_bff.edge import caller_of
from gateway_bff.limits import refusal
from gateway_bff.parts import Parts, idempotency_key, known_id, parts_of, replay_headers
from gateway_bff.problems import Problem
from gateway_bff.store.directory import Member

log = logging.getLogger(__name__)
READS = Counter(
    "liftfit_gateway_booking_reads_total",
    "Answers to GET a booking, by where they came from: this gateway's memory of bookings "
    "read lately, or the services (decision 0008)",
    ["answered_from"],
)
router = APIRouter(prefix="/v1/orgs/{org_id}", tags=["bookings"])
Key = Annotated[str, Depends(idempotency_key)]
_BOOKING = {"org_id": "$request.path.org_id", "booking_id": "$response.body#/booking_id"}
_FOLLOW = {
    "GetBooking": ("getBooking", _BOOKING),
    "CancelBooking": ("cancelBooking", _BOOKING),
    "GetAccess": ("getAccess", _BOOKING),
}


@router.post(
    "/bookings",
    status_code=201,
    response_model=resources.Booking,
    responses={**ANSWERS.member_write(), **answer(201, "The booking", **_FOLLOW)},
    operation_id="createBooking",
)
async def create_booking(
    org_id: str, body: bodies.NewBooking, key: Key, request: Request
) -> JSONResponse:
    parts, member = parts_of(request), member_of(request)
    checkout = bpb.CheckoutRequest(
        org_id=org_id,
        user=member.user,
        idempotency_key=key,
        slot_id=body.slot_id,
        party_size=body.party_size,
        payment_mode=body.payment_mode,
        contact=contact(member),
    )
    services = parts.services
    reply = await services["booking"].write(services.booking.Checkout, checkout, member.user)
    if reply.replayed:  # its payment and access may exist by now
        return await _answer(parts, reply, 201, strict=False)
    # A new booking's payment and access are made after it, by their services from its
    # events (the contract: `payment` is null until it exists, the client reads again):
    # neither exists when the booking service answers, so neither is asked for.
    return JSONResponse(resources.booking(reply.booking, None, None), status_code=201)


@router.get(
    "/bookings",
    response_model=list[resources.Booking],
    responses=ANSWERS.member_read(),
    operation_id="listBookings",
)
async def list_bookings(org_id: str, request: Request) -> JSONResponse:
    parts = parts_of(request)
    services = parts.services
    listed = await services["booking"].read(
        services.booking.ListBookings, bpb.ListBookingsRequest(org_id=org_id)
    )
    newest_first = sorted(listed.bookings, key=lambda b: b.created_at.ToNanoseconds(), reverse=True)
    shown = await asyncio.gather(*(booking_resource(parts, b) for b in newest_first))
    return JSONResponse(list(shown))


@router.get(
    "/bookings/{booking_id}",
    response_model=resources.Booking,
    responses={**ANSWERS.member_read(), **answer(200, "The booking", **_FOLLOW)},
    operation_id="getBooking",
)
async def get_booking(org_id: str, booking_id: str, request: Request) -> Response:
    """Answered from what this gateway read lately when it can (decision 0008); `Age`
    says how many whole seconds ago the services were asked."""
    parts = parts_of(request)
    cache = parts.bookings
    kept = cache.get(org_id, booking_id)
    if kept is None:
        kept = await _read_and_keep(parts, org_id, booking_id)
        READS.labels("services").inc()
    else:
        READS.labels("memory").inc()
    age = str(int(kept.age_s(cache.now())))
    return Response(kept.body, media_type="application/json", headers={"Age": age})


async def _read_and_keep(parts: Parts, org_id: str, booking_id: str) -> Kept:
    cache = parts.bookings
    reading = cache.start_reading(booking_id)
    try:
        found = await read_booking(parts, org_id, booking_id)
        body = bytes(JSONResponse(await booking_resource(parts, found)).body)
    except BaseException:
        cache.finish_reading(reading, None, None)  # nothing to keep; the reading ends
        raise
    cache.finish_reading(reading, org_id, body)
    return Kept(org_id, body, reading.started_at)


@router.post(
    "/bookings/{booking_id}/cancel",
    response_model=resources.Booking,
    responses=ANSWERS.member_write(),
    operation_id="cancelBooking",
)
async def cancel_booking(
    org_id: str, booking_id: str, body: bodies.Cancellation, key: Key, request: Request
) -> JSONResponse:
    parts, member = parts_of(request), member_of(request)
    cancel = bpb.CancelBookingRequest(
        org_id=org_id,
        user=member.user,
        idempotency_key=key,
        booking_id=known_id(booking_id, "booking"),
    )
    services = parts.services
    reply = await services["booking"].write(services.booking.CancelBooking, cancel, member.user)
    parts.bookings.forget(booking_id)  # this replica's next read is the services' own
    return await _answer(parts, reply, 200, strict=False)


@router.post(
    "/bookings/{booking_id}/reschedule",
    response_model=resources.Booking,
    responses=ANSWERS.member_write(),
    operation_id="rescheduleBooking",
)
async def reschedule_booking(
    org_id: str, booking_id: str, body: bodies.Move, key: Key, request: Request
) -> JSONResponse:
    parts, member = parts_of(request), member_of(request)
    move = bpb.RescheduleBookingRequest(
        org_id=org_id,
        user=member.user,
        idempotency_key=key,
        booking_id=known_id(booking_id, "booking"),
        new_slot_id=body.slot_id,
    )
    services = parts.services
    reply = await services["booking"].write(services.booking.RescheduleBooking, move, member.user)
    parts.bookings.forget(booking_id)  # this replica's next read is the services' own
    return await _answer(parts, reply, 200, strict=False)


@router.get(
    "/bookings/{booking_id}/access",
    response_model=resources.Access,
    responses=ANSWERS.member_read(429),
    operation_id="getAccess",
)
async def get_access(org_id: str, booking_id: str, request: Request) -> JSONResponse:
    """The PIN is shown only while the access is active; each answer with it is recorded.
    A booking's access is read at most so often (429 past it, gateway_bff.limits)."""
    parts, member = parts_of(request), member_of(request)
    await read_booking(parts, org_id, booking_id)
    await _limit_pin_reads(parts, member, booking_id)
    services = parts.services
    disclose = apb.DisclosePinRequest(
        booking_id=booking_id, user=member.user, org_id=org_id, purpose="customer_view"
    )
    try:
        shown = await services["access"].write(services.access.DisclosePin, disclose, member.user)
    except Problem as problem:
        if problem.code != "pin_not_active":
            raise
        ask = apb.GetAccessRequest(booking_id=booking_id, org_id=org_id)
        shown = await services["access"].read(services.access.GetAccess, ask, member.user)
    return JSONResponse(resources.access(shown))


async def _limit_pin_reads(parts: Parts, member: Member, booking_id: str) -> None:
    """Counted once the booking is known to be the organisation's, so no one can use up
    another organisation's reads. The access service records each disclosure; a refusal is
    logged and counted, and the first of a run is also in the gateway's audit log: one row
    per run, so a caller who keeps asking cannot fill a log that is never pruned."""
    verdict = parts.limits.pin_read(booking_id)
    if verdict.admitted:
        return
    log.warning(
        "PIN read refused by the limit (%d in a row) for user %s",
        verdict.refused_in_a_row,
        member.user,
        extra={"booking_id": booking_id},
    )
    if verdict.refused_in_a_row == 1:
        detail = {"org_id": member.org_id, "retry_after_s": verdict.retry_after_s}
        await parts.directory.record(member.user, "pin_read_refused", booking_id, detail)
    raise refusal(verdict, "pin_reads", "reads of this booking's PIN")


def contact(member: Member) -> bev.Contact:
    """The member's contact, copied into the booking or order: its mails go there."""
    return bev.Contact(email=member.email or "", locale=member.locale)


async def read_booking(parts: Parts, org_id: str, booking_id: str) -> bpb.Booking:
    services = parts.services
    ask = bpb.GetBookingRequest(org_id=org_id, booking_id=known_id(booking_id, "booking"))
    found: bpb.Booking = await services["booking"].read(services.booking.GetBooking, ask)
    return found


async def booking_resource(
    parts: Parts, booking: bpb.Booking, strict: bool = True
) -> dict[str, Any]:
    """The booking with its payment and access, read from their services side by side.

    `strict`: a payment or access service that does not answer fails the read (503);
    otherwise (the answer to a write, which has happened) it shows as not known yet.
    """
    payment, access = await asyncio.gather(
        _payment_of(parts, booking, strict), _access_of(parts, booking, strict)
    )
    return resources.booking(booking, payment, access)


async def _payment_of(parts: Parts, booking: bpb.Booking, strict: bool) -> ppb.Payment | None:
    if booking.payment_mode != "card":
        return None
    services = parts.services
    ask = ppb.GetPaymentForBookingRequest(booking_id=booking.booking_id)
    found: ppb.Payment | None = await _maybe(
        services["payment"].read(services.payment.GetPaymentForBooking, ask), strict
    )
    return found


async def _access_of(parts: Parts, booking: bpb.Booking, strict: bool) -> apb.Access | None:
    if booking.state == "pending" or booking.state == "expired":
        return None  # no grant is ever planned before a booking is confirmed
    services = parts.services
    ask = apb.GetAccessRequest(booking_id=booking.booking_id, org_id=booking.org_id)
    found: apb.Access | None = await _maybe(
        services["access"].read(services.access.GetAccess, ask), strict
    )
    return found


async def _maybe(call: Any, strict: bool) -> Any:
    try:
        return await call
    except Problem as problem:
        if problem.code == "not_found" or not strict:
            return None
        raise


async def _answer(parts: Parts, reply: bpb.BookingReply, status: int, strict: bool) -> JSONResponse:
    body = await booking_resource(parts, reply.booking, strict)
    return JSONResponse(body, status_code=status, headers=replay_headers(reply.replayed))


def member_of(request: Request) -> Member:
    member = caller_of(request).member
    assert member is not None, "the gate admits only members to /v1/orgs/..."
    return member
