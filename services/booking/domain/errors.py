"""The booking service's refusals, beside the ones every service shares (servicekit.refusals).

Each is a value of the domain with the contract's reason and its kind; the gRPC server
maps the kind to a status code, once, for every service (servicekit.errors).
"""

from __future__ import annotations

from servicekit.refusals import Kind, Refusal


class SlotUnavailable(Refusal, reason="slot_unavailable", kind=Kind.PRECONDITION):
    """The slot is held, booked, closed or already started."""


class SlotsOverlap(Refusal, reason="slots_overlap", kind=Kind.PRECONDITION):
    """A new slot overlaps one the space already has: the state refuses it, not the request."""


class InsufficientPassBalance(Refusal, reason="insufficient_pass_balance", kind=Kind.PRECONDITION):
    """The organisation has no pass entry left to redeem."""


class BookingNotCancellable(Refusal, reason="booking_not_cancellable", kind=Kind.PRECONDITION):
    """Only a pending or confirmed booking can be cancelled; an expired one cannot."""


class BookingNotReschedulable(Refusal, reason="booking_not_reschedulable", kind=Kind.PRECONDITION):
    """Only a confirmed booking can move, and only to another slot."""
