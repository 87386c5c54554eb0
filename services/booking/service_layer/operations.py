"""Operators' commands: the catalogue of spaces and slots."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from servicekit.refusals import InvalidRequest
from services.booking.domain.commands import CreateSpace, NewSlot, slots_apart
from services.booking.domain.model import Money, Slot, Space
from services.booking.service_layer import messages
from services.booking.service_layer.unit_of_work import UnitOfWork


async def create_space(uow: UnitOfWork, command: CreateSpace) -> Space:
    space = Space(str(uuid.uuid4()), command.name, command.timezone)
    await uow.spaces.add(space)
    await uow.publish(space.space_id, messages.space_created(space))
    return space


async def create_slots(uow: UnitOfWork, space_id: str, new_slots: Sequence[NewSlot]) -> list[Slot]:
    if not new_slots:
        raise InvalidRequest("at least one slot is required")
    slots_apart(new_slots)
    await uow.spaces.require(space_id)
    created = [Slot(str(uuid.uuid4()), space_id, new.during, new.price) for new in new_slots]
    await uow.slots.add_many(created)
    return created


async def close_slot(uow: UnitOfWork, slot_id: str) -> Slot:
    slot = await uow.slots.lock(slot_id)
    slot.close_by_operator()
    await uow.slots.save(slot)
    return slot


async def set_slot_price(uow: UnitOfWork, slot_id: str, price: Money) -> Slot:
    """Reprices a slot; bookings keep the price they were sold at (invariant 4)."""
    slot = await uow.slots.lock(slot_id)
    slot.price = price
    await uow.slots.save(slot)
    return slot
