"""What a service tells the operators' view about itself: two hooks over its own tables.

Everything else the view shows (effects, incidents, audit, backlog) lives in the eventing
tables every service has; only what a booking is to this service, and what its records
show to be stuck, differ from one service to the next.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

# The states of a drift finding: repaired by code, open for a human, no longer seen.
REPAIRED, OPEN, CLEARED = "repaired", "open", "cleared"
FINDING_STATES = (REPAIRED, OPEN, CLEARED)


@dataclass(frozen=True)
class BookingRecord:
    """What one service holds about a booking.

    `subjects` are the ids its effects and incidents name the booking by (the booking id,
    and a payment's, a grant's or a delivery's own id); `trace_id` only when the service
    stores it, else it is read from the trace headers of the subjects' effects.
    """

    known: bool
    subjects: Sequence[str]
    state: str = ""
    facts: Mapping[str, str] = field(default_factory=dict)
    trace_id: str = ""


class BookingLookup(Protocol):
    async def __call__(self, session: AsyncSession, booking_id: str) -> BookingRecord:
        """The booking as the service sees it; `known` False when it holds nothing."""


@dataclass(frozen=True)
class DriftFinding:
    """Something the service's records show to be wrong or stuck, said in words."""

    finding_id: str
    kind: str
    subject_id: str
    problem: str  # what is wrong
    truth: str  # which side owns the truth, and why
    repair: str  # the repair taken, or why a human must decide
    needs_human: bool
    state: str  # one of FINDING_STATES
    found_at: datetime
    cleared_at: datetime | None = None


class DriftSource(Protocol):
    async def __call__(self, session: AsyncSession, state: str | None) -> list[DriftFinding]:
        """The findings in `state` (one of FINDING_STATES), or all of them for None."""


def standing_finding_id(service: str, kind: str, subject_id: str) -> str:
    """The id of a finding read live from a service's tables rather than stored: the same
    problem keeps the same id from one listing to the next."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"liftfit:{service}:drift:{kind}:{subject_id}"))


def live_finding(
    service: str,
    kind: str,
    subject_id: str,
    found_at: datetime,
    problem: str,
    truth: str,
    repair: str,
) -> DriftFinding:
    """A finding read live from a service's tables (not stored, not repaired by code): open,
    for a human, for as long as the tables show it."""
    return DriftFinding(
        finding_id=standing_finding_id(service, kind, subject_id),
        kind=kind,
        subject_id=subject_id,
        problem=problem,
        truth=truth,
        repair=repair,
        needs_human=True,
        state=OPEN,
        found_at=found_at,
    )


@dataclass(frozen=True)
class StateQuery:
    """Which of a service's records of bookings to list: with `booking_ids`, every record of
    those bookings; else the records in `state` that last changed before `before`, the most
    recently changed first. At most `limit`."""

    booking_ids: tuple[str, ...]
    state: str
    before: datetime
    limit: int


@dataclass(frozen=True)
class BookingState:
    """One record a service keeps of a booking (the booking, a payment, a grant)."""

    booking_id: str
    state: str
    since: datetime  # when the record last changed


class StateSource(Protocol):
    async def __call__(self, session: AsyncSession, query: StateQuery) -> list[BookingState]:
        """The service's records that the query names."""


async def no_states(session: AsyncSession, query: StateQuery) -> list[BookingState]:
    """For a service that keeps no state per booking that another service's step follows."""
    return []
