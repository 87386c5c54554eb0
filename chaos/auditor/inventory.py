"""A slot is sold to one booking at a time, and the slot and its booking agree on it."""

from __future__ import annotations

from collections import defaultdict

from chaos.auditor.findings import Findings
from chaos.auditor.snapshots import Booking, Stores

LIVE = ("pending", "confirmed")
HOLDS = {"held": "pending", "booked": "confirmed"}  # slot state -> its holder's state

ONE_LIVE_BOOKING = "one_live_booking_per_slot"
SLOT_AGREES = "slot_agrees_with_its_booking"


def check_inventory(stores: Stores) -> Findings:
    findings = Findings()
    live: dict[str, list[Booking]] = defaultdict(list)
    for booking in stores.bookings:
        if booking.state in LIVE:
            live[booking.slot_id].append(booking)
    bookings = {b.booking_id: b for b in stores.bookings}
    for slot in stores.slots:
        holders = live.get(slot.slot_id, [])
        findings.check(
            ONE_LIVE_BOOKING,
            len(holders) <= 1,
            {"slot_id": slot.slot_id, "booking_ids": ",".join(b.booking_id for b in holders)},
            booking=f"{len(holders)} live bookings: "
            + ", ".join(f"{b.booking_id} {b.state}" for b in holders),
        )
        holder = bookings.get(slot.holder_booking_id or "")
        expected = HOLDS.get(slot.state)
        agrees = (
            holder is not None and holder.slot_id == slot.slot_id and holder.state == expected
            if expected
            else not holders or not stores.settled(max(b.updated_at for b in holders))
        )
        findings.check(
            SLOT_AGREES,
            agrees,
            {"slot_id": slot.slot_id, "booking_id": slot.holder_booking_id or ""},
            booking=f"slot {slot.state} holding {slot.holder_booking_id}; "
            + (
                f"that booking is {holder.state} on slot {holder.slot_id}"
                if holder
                else f"live bookings on it: {[b.booking_id for b in holders]}"
            ),
        )
    return findings
