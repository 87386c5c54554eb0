"""Reading access: a booking's state and window, its PIN as a recorded disclosure, and the
operators' views (grants, incidents, drift findings). Never a PIN in a log line."""

from __future__ import annotations

from dataclasses import dataclass

from servicekit.incidents import Incident
from servicekit.refusals import NotFound
from services.access.adapters.repository import StoredFinding
from services.access.domain.commands import AccessQuery, DisclosePin
from services.access.domain.errors import PinNotActive
from services.access.domain.model import Grant, GrantState, Provision
from services.access.service_layer import messages
from services.access.service_layer.unit_of_work import UnitOfWork


@dataclass(frozen=True)
class AccessView:
    grant: Grant
    pin: str = ""

    def __repr__(self) -> str:  # the PIN stays out of every repr
        return f"AccessView({self.grant.grant_id!r}, {self.grant.state})"


@dataclass(frozen=True)
class GrantView:
    grant: Grant
    provision: Provision | None
    disclosures: int
    alias: str


async def get_access(uow: UnitOfWork, query: AccessQuery) -> AccessView:
    return AccessView(await _current(uow, query, share=False))


async def disclose_pin(uow: UnitOfWork, command: DisclosePin) -> AccessView:
    """The PIN of the active grant, recorded as read by whom and why, and announced."""
    grant = await _current(uow, command, share=True)  # a cancellation waits, or came first
    pin = (
        await uow.credentials.pin(grant.provision_id) if grant.state is GrantState.ACTIVE else None
    )
    if pin is None:
        raise PinNotActive(command.booking_id, grant.state.value)
    await uow.disclosures.record(grant, command.reader, command.purpose.value)
    await uow.publish(grant.booking_id, messages.pin_disclosed(grant))
    return AccessView(grant, pin)


async def _current(uow: UnitOfWork, query: AccessQuery, share: bool) -> Grant:
    grant = await uow.grants.current(query.booking_id, share=share)
    # Another organisation's booking is reported as missing: existence is not leaked.
    if grant is None or grant.org_id != query.org_id:
        raise NotFound(f"no access for booking {query.booking_id}")
    return grant


async def list_grants(uow: UnitOfWork, booking_id: str) -> list[GrantView]:
    found = await uow.grants.of_booking(booking_id)
    counts = await uow.disclosures.counts([grant.grant_id for grant in found])
    views = []
    for grant in found:
        provision = await uow.provisions.get(grant.provision_id)
        alias = provision.alias(uow.policy.alias_prefix) if provision else ""
        views.append(GrantView(grant, provision, counts.get(grant.grant_id, 0), alias))
    return views


async def list_incidents(uow: UnitOfWork, state: str) -> list[Incident]:
    return await uow.incidents.listed(state or None)


async def list_findings(uow: UnitOfWork, state: str) -> list[StoredFinding]:
    return await uow.findings.listed(state or None)
