"""Invariants 1, 4, 5, 9 and 17 read straight from the booking database."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from services.booking.adapters import orm

EXPECTED_SLOT_STATE = {"pending": "held", "confirmed": "booked"}


async def slots_and_bookings(
    session: AsyncSession, slot_ids: list[str]
) -> tuple[dict[str, Any], list[Any]]:
    slots = await session.execute(select(orm.slots).where(orm.slots.c.slot_id.in_(slot_ids)))
    bookings = await session.execute(
        select(orm.bookings).where(orm.bookings.c.slot_id.in_(slot_ids))
    )
    return {str(s.slot_id): s for s in slots}, list(bookings)


def check_one_live_booking_per_slot(slots: dict[str, Any], bookings: list[Any]) -> None:
    live = [b for b in bookings if b.state in EXPECTED_SLOT_STATE]
    assert len({b.slot_id for b in live}) == len(live), "two live bookings on one slot"
    for b in live:
        slot = slots[str(b.slot_id)]
        assert str(slot.holder_booking_id) == str(b.booking_id), (slot, b)
        assert slot.state == EXPECTED_SLOT_STATE[b.state], (slot, b)
    holders = {str(b.booking_id) for b in live}
    for slot in slots.values():
        assert slot.holder_booking_id is None or str(slot.holder_booking_id) in holders, slot


def check_snapshots(
    bookings: list[Any], snapshots: dict[str, tuple[int, str, str]], slots: dict[str, Any]
) -> None:
    for b in bookings:
        assert (b.price_amount, b.currency, b.terms_version) == snapshots[str(b.booking_id)]
        slot = slots[str(b.slot_id)]
        assert (b.valid_from, b.valid_to) == (slot.starts_at, slot.ends_at)


async def check_pass_ledger(session: AsyncSession, org_id: str) -> int:
    balance = await session.scalar(
        select(orm.pass_balances.c.balance).where(orm.pass_balances.c.org_id == org_id)
    )
    total = await session.scalar(
        select(func.coalesce(func.sum(orm.pass_ledger.c.delta), 0)).where(
            orm.pass_ledger.c.org_id == org_id
        )
    )
    assert (balance or 0) >= 0 and (balance or 0) == total, (balance, total)
    return int(balance or 0)


async def unowned_payment_ids(session: AsyncSession) -> set[str]:
    return set((await session.execute(select(orm.unowned_payments.c.payment_id))).scalars())


async def outstanding_disclosures(session: AsyncSession, slot_ids: list[str]) -> list[Any]:
    t = orm.pin_disclosures.c
    rows = await session.execute(
        select(t.booking_id, t.slot_id).where(
            t.slot_id.in_(slot_ids), t.disclosed_at.is_not(None), t.revoked_at.is_(None)
        )
    )
    return list(rows)


def check_disclosed_slots_stay_closed(slots: dict[str, Any], outstanding: list[Any]) -> None:
    waiting = {str(row.slot_id) for row in outstanding}
    for row in outstanding:
        slot = slots[str(row.slot_id)]
        if str(slot.holder_booking_id) != str(row.booking_id):
            assert slot.state == "closed", ("a disclosed PIN's slot was freed", slot)
    for slot_id, slot in slots.items():
        if slot.closed_reason == "awaiting_revocation":
            assert slot_id in waiting, ("closed although revocation was confirmed", slot)
