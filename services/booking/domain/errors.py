"""The booking service's refusals, beside the ones every service shares (servicekit.refusals).

Each is a value of the domain with the contract's reason and its kind; the gRPC server
maps the kind to a status code, once, for every service (servicekit.errors).
"""

from __future__ import annotations

from servicekit.refusals import Kind, Refusal


class SlotUnavailable(Refusal):
    """The slot is held, booked, closed or already started."""

    reason = "slot_unavailable"
    kind = Kind.PRECONDITION


class InsufficientPassBalance(Refusal):
    reason = "insufficient_pass_balance"
    kind = Kind.PRECONDITION


class BookingNotCancellable(Refusal):
    reason = "booking_not_cancellable"
    kind = Kind.PRECONDITION


class BookingNotReschedulable(Refusal):
    reason = "booking_not_reschedulable"
    kind = Kind.PRECONDITION
