"""The access events of the contract (protos/liftfit/access/v1/events.proto), built from
grants. None of them carries a PIN."""

from __future__ import annotations

from liftfit.access.v1 import events_pb2 as ev

from services.access.domain.model import Grant


def _which(grant: Grant) -> dict[str, str]:
    return {"booking_id": grant.booking_id, "slot_id": grant.slot_id, "grant_id": grant.grant_id}


def pin_disclosed(grant: Grant) -> ev.PinDisclosed:
    return ev.PinDisclosed(**_which(grant))


def revocation_confirmed(grant: Grant) -> ev.RevocationConfirmed:
    return ev.RevocationConfirmed(**_which(grant))


def access_activated(grant: Grant) -> ev.AccessActivated:
    return ev.AccessActivated(booking_id=grant.booking_id, grant_id=grant.grant_id)
