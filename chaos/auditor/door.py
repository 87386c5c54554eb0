"""The lock holds a code exactly for the confirmed bookings inside their window, with the
booking's window, and a PIN never opens the door outside its window or after the access
service saw its revocation confirmed.

A code is the platform's when its name is the alias of a provision (`<prefix>-<provision
id>`); the provision names its grant, the grant its booking.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from chaos.auditor.findings import Findings
from chaos.auditor.snapshots import Booking, Grant, LockCode, Stores
from services.access.domain.model import provision_of_alias

LIVE_AT_THE_LOCK = ("setting", "set", "removing")  # not yet confirmed removed
ENDED = ("cancelled", "expired")

ONE_CODE = "confirmed_booking_in_window_has_one_code"
NO_CODE_FOR_ENDED = "no_code_for_a_booking_ended_or_moved"
UNKNOWN_CODE = "no_code_the_platform_does_not_know"
DOOR_OPENED = "door_opens_only_in_window_and_before_revocation"


@dataclass(frozen=True)
class Owner:
    grant: Grant
    booking: Booking | None


def check_door(stores: Stores) -> Findings:
    findings = Findings()
    owners = _owners(stores)
    live_codes: dict[str, list[LockCode]] = defaultdict(list)  # booking id -> codes
    for code in stores.codes:
        if code.status not in LIVE_AT_THE_LOCK:
            continue
        owner = owners.get(code.code_id)
        findings.check(
            UNKNOWN_CODE,
            owner is not None,
            {"code_id": code.code_id, "name": code.name},
            lock_provider=f"{code.status} on {code.device_id}",
            access="no provision, or no grant, by that name",
        )
        if owner is None:
            continue
        live_codes[owner.grant.booking_id].append(code)
        _not_ended(stores, findings, code, owner)
    for booking in stores.bookings:
        if _due_for_a_code(stores, booking):
            _one_code(stores, findings, booking, live_codes.get(booking.booking_id, []), owners)
    _door_log(stores, findings, owners)
    return findings


def _owners(stores: Stores) -> dict[str, Owner]:
    """Each code id the lock knows, by its name, mapped to its grant and booking."""
    grants = {g.grant_id: g for g in stores.grants}
    provisions = {p.provision_id: p for p in stores.provisions}
    bookings = {b.booking_id: b for b in stores.bookings}
    owners: dict[str, Owner] = {}
    for code in stores.codes:
        provision_id = provision_of_alias(stores.rules.alias_prefix, code.name)
        provision = provisions.get(provision_id or "")
        grant = grants.get(provision.grant_id) if provision else None
        if grant is not None:
            owners[code.code_id] = Owner(grant, bookings.get(grant.booking_id))
    return owners


def _not_ended(stores: Stores, findings: Findings, code: LockCode, owner: Owner) -> None:
    booking = owner.booking
    ended = booking is None or booking.state in ENDED or booking.slot_id != owner.grant.slot_id
    findings.check(
        NO_CODE_FOR_ENDED,
        not ended or (booking is not None and not stores.settled(booking.updated_at)),
        {
            "code_id": code.code_id,
            "grant_id": owner.grant.grant_id,
            "booking_id": owner.grant.booking_id,
        },
        lock_provider=f"{code.status} on {code.device_id} for {code.starts_at}..{code.ends_at}",
        access=f"grant {owner.grant.state} for slot {owner.grant.slot_id}",
        booking=f"{booking.state} on slot {booking.slot_id}" if booking else "not found",
    )


def _due_for_a_code(stores: Stores, booking: Booking) -> bool:
    opens_at = max(booking.valid_from - stores.rules.activation_lead, booking.updated_at)
    return (
        booking.state == "confirmed" and stores.settled(opens_at) and stores.now < booking.valid_to
    )


def _one_code(
    stores: Stores,
    findings: Findings,
    booking: Booking,
    codes: list[LockCode],
    owners: dict[str, Owner],
) -> None:
    current = [
        c
        for c in codes
        if c.status != "removing" and owners[c.code_id].grant.slot_id == booking.slot_id
    ]
    window = (booking.valid_from, booking.valid_to)
    findings.check(
        ONE_CODE,
        len(current) == 1 and (current[0].starts_at, current[0].ends_at) == window,
        {"booking_id": booking.booking_id, "code_ids": ",".join(c.code_id for c in current)},
        booking=f"confirmed on slot {booking.slot_id}, window {window[0]}..{window[1]}",
        lock_provider="; ".join(
            f"{c.code_id} {c.status} {c.starts_at}..{c.ends_at}" for c in current
        )
        or "no code",
    )


def _door_log(stores: Stores, findings: Findings, owners: dict[str, Owner]) -> None:
    for attempt in stores.door_log:
        if attempt.code_id is None:
            continue
        owner = owners.get(attempt.code_id)
        ids = {"code_id": attempt.code_id, "device_id": attempt.device_id}
        if owner is None:
            findings.check(
                DOOR_OPENED,
                False,
                ids,
                lock_provider=f"opened at {attempt.wall} for {attempt.at}",
                access="no grant by that code's name",
            )
            continue
        grant = owner.grant
        inside = grant.valid_from <= attempt.at < grant.valid_to
        revoked_before = grant.state == "revoked" and grant.updated_at <= attempt.wall
        findings.check(
            DOOR_OPENED,
            inside and not revoked_before,
            ids | {"grant_id": grant.grant_id, "booking_id": grant.booking_id},
            lock_provider=f"PIN opened at {attempt.wall} for {attempt.at}",
            access=f"grant {grant.state} since {grant.updated_at}, "
            f"window {grant.valid_from}..{grant.valid_to}",
        )
