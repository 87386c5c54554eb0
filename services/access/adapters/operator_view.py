"""The access service's side of the operators' view (servicekit.operations): a booking's
grants as this service holds them, the drift check's stored findings, and grants by
booking for the gateway's check of confirmed bookings that never got one. Never a PIN."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.operations.hooks import BookingRecord, BookingState, DriftFinding, StateQuery
from servicekit.operations.states import states_in
from services.access.adapters import orm
from services.access.adapters.repository import (
    FindingRepository,
    GrantRepository,
    ProvisionRepository,
    StoredFinding,
)


async def describe_booking(session: AsyncSession, booking_id: str) -> BookingRecord:
    """The state of the booking's newest grant (its live one, if it has one) and that
    grant's provision. Effects and incidents name the booking (events), a grant (the end of
    its window, never_activated), a provision (its activation, duplicate_credential) or a
    provider code (its removal), so every one of those is a subject."""
    grants = await GrantRepository(session).of_booking(booking_id)
    if not grants:
        return BookingRecord(known=False, subjects=[booking_id])
    current = grants[-1]  # oldest first: the newest is the live one, if any is
    subjects, facts = [booking_id], {"grants": str(len(grants))}
    provisions = ProvisionRepository(session)
    for grant in grants:
        subjects.append(grant.grant_id)
        for provision in await provisions.of_grant(grant.grant_id):
            subjects.append(provision.provision_id)
            if provision.provider_code_id:
                subjects.append(provision.provider_code_id)
            if provision.provision_id == current.provision_id:
                facts["provision_state"] = provision.state.value
                facts["provider_code_id"] = provision.provider_code_id or ""
    facts.update(
        grant_id=current.grant_id,
        provision_id=current.provision_id,
        slot_id=current.slot_id,
        device_id=current.device_id,
        valid_from=current.window.valid_from.isoformat(),
        valid_to=current.window.valid_to.isoformat(),
    )
    if current.failure:
        facts["failure"] = current.failure
    return BookingRecord(known=True, subjects=subjects, state=current.state.value, facts=facts)


async def drift_findings(session: AsyncSession, state: str | None) -> list[DriftFinding]:
    """What the drift check stored: each finding as it stands (repaired, open or cleared)."""
    return [_finding(f) for f in await FindingRepository(session).listed(state)]


async def booking_states(session: AsyncSession, query: StateQuery) -> list[BookingState]:
    """The bookings' grants (every one, whatever its state), or the grants in a state."""
    g = orm.grants.c
    return await states_in(session, g.booking_id, g.state, g.updated_at, query)


def _finding(stored: StoredFinding) -> DriftFinding:
    return DriftFinding(
        finding_id=stored.finding_id,
        kind=stored.kind,
        subject_id=stored.subject_id,
        problem=stored.problem,
        truth=stored.truth,
        repair=stored.repair,
        needs_human=stored.needs_human,
        state=stored.state,
        found_at=stored.found_at,
        cleared_at=stored.cleared_at,
    )
