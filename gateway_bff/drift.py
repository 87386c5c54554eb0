"""Drift that only two services' records show together: a saga step that never came.

Each service knows its own side only: booking that a booking is confirmed or ended,
access whether it granted access, payment whether a payment is still open. The services
never call one another, and the gateway already asks each of them for its side of the
operators' view, so it joins these facts here, when an operator asks, from each service's
ListBookingStates. Every check is bounded: at most CANDIDATES records from the first
service, and their ids asked of the second in pages of PAGE.

- A confirmed booking whose window has not ended, confirmed over `access_after` ago, for
  which access holds no grant: the customer has no PIN and the door will not open.
- A booking's payment still pending (open at the card gateway) while the booking was
  cancelled or expired over `payment_open_after` ago: the customer may still pay for it.
- A booking confirmed over `unpaid_after` ago whose payment is not paid: the booking
  believed a payment event the payment service's records do not bear out.
- An active credential (a code at the lock) for a booking that has not been confirmed for
  over `credential_after`, or that booking does not know: the door opens for nobody's
  booking.

A finding is read live, never stored: it stays `open`, for a human, with the same id, for
as long as the records show it, and is gone once the missing step came. A service that did
not answer is named in `unavailable`, and the checks that need it are not made.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from google.protobuf.timestamp_pb2 import Timestamp
from liftfit.ops.v1 import operations_pb2 as opb

from gateway_bff.problems import Problem
from servicekit.operations.hooks import DriftFinding, live_finding
from servicekit.operations.messages import finding_message
from servicekit.protobuf import timestamp

CANDIDATES = 1000  # records read from the first service of a check
PAGE = 250  # booking ids asked of the second service at once (its answer holds <= 1000)
ENDED = ("cancelled", "expired")

Ask = Callable[[str, opb.ListBookingStatesRequest], Awaitable[opb.ListBookingStatesResponse]]


@dataclass(frozen=True)
class DriftBounds:
    """How long a step may take before its absence is drift (GATEWAY_DRIFT_* settings)."""

    access_after: timedelta = timedelta(minutes=5)
    payment_open_after: timedelta = timedelta(minutes=5)
    unpaid_after: timedelta = timedelta(minutes=5)
    credential_after: timedelta = timedelta(minutes=5)


async def cross_findings(ask: Ask, bounds: DriftBounds) -> tuple[list[opb.DriftFinding], list[str]]:
    """Every check's findings, and the services that did not answer."""
    now = datetime.now(UTC)
    checks = (
        _confirmed_without_access(ask, now - bounds.access_after),
        _payment_open_for_ended_booking(ask, now - bounds.payment_open_after),
        _confirmed_without_paid_payment(ask, now - bounds.unpaid_after),
        _credential_without_confirmed_booking(ask, now - bounds.credential_after),
    )
    answers = await asyncio.gather(*checks, return_exceptions=True)
    found: list[opb.DriftFinding] = []
    unavailable: list[str] = []
    for answer in answers:
        if isinstance(answer, Unanswered):
            unavailable.append(answer.service)
        elif isinstance(answer, BaseException):
            raise answer
        else:
            found += answer
    return found, sorted(set(unavailable))


class Unanswered(Exception):
    def __init__(self, service: str) -> None:
        super().__init__(service)
        self.service = service


async def _asked(
    ask: Ask, service: str, request: opb.ListBookingStatesRequest
) -> list[opb.BookingState]:
    try:
        return list((await ask(service, request)).bookings)
    except Problem:
        raise Unanswered(service) from None


async def _of_bookings(
    ask: Ask, service: str, booking_ids: Sequence[str]
) -> list[opb.BookingState]:
    """Every record `service` holds of these bookings, asked in pages."""
    found: list[opb.BookingState] = []
    for start in range(0, len(booking_ids), PAGE):
        page = booking_ids[start : start + PAGE]
        request = opb.ListBookingStatesRequest(booking_ids=page, limit=CANDIDATES)
        found += await _asked(ask, service, request)
    return found


async def _confirmed_without_access(ask: Ask, before: datetime) -> list[opb.DriftFinding]:
    request = opb.ListBookingStatesRequest(
        state="confirmed", before=timestamp(before), limit=CANDIDATES
    )
    confirmed = await _asked(ask, "booking", request)
    granted = {
        g.booking_id for g in await _of_bookings(ask, "access", [b.booking_id for b in confirmed])
    }
    return [
        _finding(
            "access",
            "confirmed_without_access",
            b.booking_id,
            b.since.ToDatetime(tzinfo=UTC),
            problem=f"the booking {b.booking_id} was confirmed at {_when(b.since)} and the"
            " access service holds no grant for it: the customer has no PIN, no door code"
            " was created and no access mail can be sent",
            truth="the booking service: the booking is confirmed, and access follows it"
            " (BookingConfirmed on booking.events)",
            repair="none by code: look for a failed BookingConfirmed of the booking at the"
            " booking service (an open outbox_row_failed incident) and replay it, or at the"
            " access consumer's lag (/v1/ops/lag) if access is not reading",
        )
        for b in confirmed
        if b.booking_id not in granted
    ]


async def _payment_open_for_ended_booking(ask: Ask, before: datetime) -> list[opb.DriftFinding]:
    request = opb.ListBookingStatesRequest(state="pending", limit=CANDIDATES)
    pending = await _asked(ask, "payment", request)
    bookings = await _of_bookings(ask, "booking", [p.booking_id for p in pending])
    return [
        _finding(
            "payment",
            "payment_open_for_ended_booking",
            b.booking_id,
            b.since.ToDatetime(tzinfo=UTC),
            problem=f"the booking {b.booking_id} was {b.state} at {_when(b.since)}, but its"
            " payment is still pending, open at the card gateway: the customer may still pay"
            " for a booking that no longer holds its slot",
            truth=f"the booking service: the booking is {b.state}, and the payment service"
            " cancels the payment when it hears so",
            repair="none by code beyond the payment service's reconciliation sweep: look for"
            f" the booking's failed Booking{b.state.capitalize()} at the booking service (an"
            " open outbox_row_failed incident) and replay it; a payment made meanwhile is"
            " refunded as a payment without a booking",
        )
        for b in bookings
        if b.state in ENDED and b.since.ToDatetime(tzinfo=UTC) < before
    ]


async def _confirmed_without_paid_payment(ask: Ask, before: datetime) -> list[opb.DriftFinding]:
    request = opb.ListBookingStatesRequest(
        state="confirmed", before=timestamp(before), limit=CANDIDATES
    )
    confirmed = {b.booking_id: b for b in await _asked(ask, "booking", request)}
    payments = await _of_bookings(ask, "payment", list(confirmed))
    return [
        _finding(
            "booking",
            "confirmed_without_paid_payment",
            p.booking_id,
            confirmed[p.booking_id].since.ToDatetime(tzinfo=UTC),
            problem=f"the booking {p.booking_id} was confirmed at"
            f" {_when(confirmed[p.booking_id].since)}, but its payment is {p.state}, not paid:"
            " the booking believed a payment success the payment service does not hold, and"
            " access may give its customer a door code nobody paid for",
            truth="the payment service: only its payment's state says whether money was"
            " taken; the booking confirms on its PaymentSucceeded",
            repair="none by code: look at the booking's incidents at the booking service"
            " (payment_id_conflict, payment_event_refused) and its payment at the payment"
            " service; if no payment of the booking was paid, cancel the booking (access"
            " revokes its code), and find who wrote the payment topic",
        )
        for p in payments
        if p.booking_id in confirmed and p.state != "paid"
    ]


async def _credential_without_confirmed_booking(
    ask: Ask, before: datetime
) -> list[opb.DriftFinding]:
    request = opb.ListBookingStatesRequest(state="active", limit=CANDIDATES)
    active = {g.booking_id: g for g in await _asked(ask, "access", request)}
    bookings = {b.booking_id: b for b in await _of_bookings(ask, "booking", list(active))}
    found = []
    for booking_id, grant in active.items():
        booking = bookings.get(booking_id)
        since = booking.since if booking is not None else grant.since
        if since.ToDatetime(tzinfo=UTC) >= before:
            continue  # the revocation has time yet
        if booking is not None and booking.state == "confirmed":
            continue
        found.append(_credential_finding(booking_id, booking, since))
    return found


def _credential_finding(
    booking_id: str, booking: opb.BookingState | None, since: Timestamp
) -> opb.DriftFinding:
    said = f"is {booking.state} since {_when(since)}" if booking else "is unknown to it"
    return _finding(
        "access",
        "credential_without_confirmed_booking",
        booking_id,
        since.ToDatetime(tzinfo=UTC),
        problem=f"the access service holds an active door code for the booking {booking_id},"
        f" which the booking service says {said}: the door opens for a booking nobody holds",
        truth="the booking service: a code may open the door only for a confirmed booking;"
        " access follows the booking's events",
        repair="none by code: look for the booking's failed BookingCancelled or"
        " BookingExpired at the booking service (an open outbox_row_failed incident) and"
        " replay it, so access revokes the code; a booking the booking service does not know"
        " means the grant came from an event it never sent: revoke the code at access",
    )


def _finding(
    service: str,
    kind: str,
    booking_id: str,
    since: datetime,
    problem: str,
    truth: str,
    repair: str,
) -> opb.DriftFinding:
    found: DriftFinding = live_finding(
        service, kind, booking_id, since, problem=problem, truth=truth, repair=repair
    )
    return finding_message(service, found)


def _when(stamp: Timestamp) -> str:
    return f"{stamp.ToDatetime(tzinfo=UTC):%Y-%m-%d %H:%M:%S} UTC"
