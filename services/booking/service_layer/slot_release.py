"""Freeing the slot a booking leaves, under the disclosure rule: a slot whose PIN a customer
saw stays closed until the lock provider confirms the PIN's revocation."""

from __future__ import annotations

from services.booking.domain.model import Slot
from services.booking.service_layer.unit_of_work import UnitOfWork


async def release_slot(uow: UnitOfWork, booking_id: str, slot: Slot) -> None:
    """Available again, or closed while a PIN this booking disclosed may still open the door."""
    pin_disclosed = await uow.disclosures.outstanding_for(booking_id, slot.slot_id)
    if slot.release_from(booking_id, pin_disclosed):
        await uow.slots.save(slot)
