"""Planning, ending and settling grants: what the booking's events and the timers decide.

A confirmed booking gets its grant at once, planned: its credential is created by a job in
the activation window. A cancelled, moved or ended grant stops being disclosable at once
(its PIN is erased) and its code is removed by a destructive job; the grant is revoked
only when the provider confirmed every code of it gone, and only then is
RevocationConfirmed announced, which lets the booking service sell a closed slot again.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from services.access.domain.model import (
    UNSETTLED,
    CodeToRemove,
    Grant,
    GrantState,
    Provision,
    ProvisionState,
    Window,
)
from services.access.service_layer import jobs, messages
from services.access.service_layer.unit_of_work import UnitOfWork

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BookingAccess:
    """What a confirmed (or moved) booking tells us: who, which slot, which window."""

    booking_id: str
    org_id: str
    user: str
    slot_id: str
    space_id: str
    window: Window
    move: int = 0  # the booking's move that put it there; 0 for its confirmation


async def plan_access(uow: UnitOfWork, booking: BookingAccess) -> Grant | None:
    """The booking's grant, planned; a repeated or late confirmation plans nothing."""
    if await uow.ended_bookings.ended(booking.booking_id):
        return None  # cancelled before its confirmation reached us
    if await uow.grants.of_booking(booking.booking_id, lock=True):
        return None
    return await _new_grant(uow, booking)


async def end_access(uow: UnitOfWork, booking_id: str) -> None:
    """The booking was cancelled: every live grant of it ends."""
    await uow.ended_bookings.record(booking_id)
    for grant in await uow.grants.of_booking(booking_id, lock=True):
        await end_grant(uow, grant)


async def move_access(uow: UnitOfWork, booking: BookingAccess) -> Grant | None:
    """The booking moved: the old grant ends, a new one is planned for the new slot.

    Moves are numbered by the booking service. A move no newer than one already applied
    (a redelivery, or an older move replayed after a newer one) changes nothing: it must
    never take the door back to a slot the booking has left (invariant 13)."""
    if await uow.ended_bookings.ended(booking.booking_id):
        return None
    grants = await uow.grants.of_booking(booking.booking_id, lock=True)
    if _applied_already(grants, booking):
        return None
    for grant in grants:
        if grant.is_live:
            await end_grant(uow, grant)
    return await _new_grant(uow, booking)


def _applied_already(grants: list[Grant], booking: BookingAccess) -> bool:
    if booking.move:
        return any(grant.booking_move >= booking.move for grant in grants)
    # An unnumbered move, as producers sent it before moves were numbered: applied unless
    # the booking is there already. Such moves cannot be ordered among themselves.
    return any(
        g.is_live and (g.slot_id, g.window) == (booking.slot_id, booking.window) for g in grants
    )


async def _new_grant(uow: UnitOfWork, booking: BookingAccess) -> Grant:
    grant = Grant(
        grant_id=str(uuid.uuid4()),
        booking_id=booking.booking_id,
        org_id=booking.org_id,
        user=booking.user,
        slot_id=booking.slot_id,
        device_id=uow.policy.devices.of_space(booking.space_id),
        window=booking.window,
        state=GrantState.PLANNED,
        provision_id=str(uuid.uuid4()),
        booking_move=booking.move,
    )
    await uow.grants.add(grant)
    provision = Provision(
        grant.provision_id, grant.grant_id, grant.device_id, ProvisionState.PENDING
    )
    await uow.provisions.add(provision)
    await jobs.schedule_activation(uow, grant)
    await jobs.schedule_end_of_window(uow, grant)
    return grant


async def end_grant(uow: UnitOfWork, grant: Grant) -> None:
    """Ends a live grant (locked by the caller): no more disclosures, its code removed."""
    if not grant.end():
        return
    await uow.grants.save(grant)
    for provision in await uow.provisions.of_grant(grant.grant_id, lock=True):
        await _stop_provision(uow, grant, provision)
    await settle_revocation(uow, grant)


async def _stop_provision(uow: UnitOfWork, grant: Grant, provision: Provision) -> None:
    await uow.credentials.erase(provision.provision_id)
    if provision.state is ProvisionState.PENDING:
        provision.abandon()  # nothing was sent: nothing can be at the provider
        await uow.provisions.save(provision)
    elif provision.start_removing() and provision.provider_code_id is not None:
        await uow.provisions.save(provision)
        order = CodeToRemove(
            grant.grant_id, provision.provision_id, provision.provider_code_id, grant.window
        )
        await jobs.schedule_removal(uow, order)
    # A provision still creating is left to its activation job, which finds the grant
    # ended and removes whatever its alias shows at the provider.


async def settle_revocation(uow: UnitOfWork, grant: Grant) -> None:
    """Revoked once no code of the grant can still be at the provider."""
    if grant.state is not GrantState.REVOKE_PENDING:
        return
    provisions = await uow.provisions.of_grant(grant.grant_id)
    if any(provision.state in UNSETTLED for provision in provisions):
        return
    grant.confirm_revoked()
    await uow.grants.save(grant)
    await uow.publish(grant.booking_id, messages.revocation_confirmed(grant))


async def end_of_window(uow: UnitOfWork, grant_id: str, window: Window) -> None:
    """The window is over: a grant still live on it ends; one never activated is an incident."""
    grant = await uow.grants.get(grant_id, lock=True)
    if grant is None or grant.window != window or not grant.is_live:
        return
    if grant.state is GrantState.PLANNED:
        log.warning("grant %s: its window ended before it was ever active", grant.grant_id)
        await uow.incidents.open(
            "never_activated",
            grant.grant_id,
            f"booking {grant.booking_id}: the access window ended before its credential"
            " was created; the customer could not enter",
        )
    await end_grant(uow, grant)


async def reprovision(uow: UnitOfWork, grant: Grant, gone: Provision) -> bool:
    """A new credential for an active grant whose code the provider no longer holds."""
    if grant.state is not GrantState.ACTIVE or gone.provider_code_id is None:
        return False
    gone.confirm_removed(gone.provider_code_id)
    await uow.provisions.save(gone)
    await uow.credentials.erase(gone.provision_id)
    fresh = Provision(str(uuid.uuid4()), grant.grant_id, grant.device_id, ProvisionState.PENDING)
    await uow.provisions.add(fresh)
    grant.reprovision(fresh.provision_id)
    await uow.grants.save(grant)
    await jobs.schedule_activation(uow, grant)
    return True
