"""Repositories over one session: rows in, domain objects out.

Every `lock` takes a row lock (SELECT ... FOR UPDATE) that the caller's transaction holds
until it commits; the handlers take them in one fixed order (attempt, booking, slots by
id, pass balance), so two transactions never wait for each other in a cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit import driver_sql
from servicekit.refusals import NotFound
from services.booking.adapters import orm
from services.booking.adapters.rows import (
    booking_of,
    booking_values,
    is_uuid,
    new_booking_values,
    slot_of,
    slot_values,
)
from services.booking.domain.errors import SlotsOverlap, SlotUnavailable
from services.booking.domain.model import Booking, Slot


@contextmanager
def slot_taken_is_unavailable(slot_id: str = "") -> Iterator[None]:
    """The one-live-booking index refusing a booking means the slot is taken.

    Only that index is expected; any other violation is a real error. Around a pipeline,
    the violation arrives when the pipeline ends, so callers wrap the whole block.
    """
    try:
        yield
    except IntegrityError as error:
        if driver_sql.constraint_of(error) == orm.ONE_LIVE_BOOKING_PER_SLOT:
            slot = f"slot {slot_id}" if slot_id else "the slot"
            raise SlotUnavailable(f"{slot} already has a booking") from None
        raise


class SlotRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add_many(self, new_slots: Sequence[Slot]) -> None:
        rows = [
            {
                **slot_values(slot),
                "slot_id": slot.slot_id,
                "space_id": slot.space_id,
                "starts_at": slot.during.starts_at,
                "ends_at": slot.during.ends_at,
            }
            for slot in new_slots
        ]
        try:
            await self._session.execute(orm.slots.insert(), rows)
        except IntegrityError as error:
            if driver_sql.constraint_of(error) == "slots_do_not_overlap_in_a_space":
                # New slots that overlap each other were refused before (commands.slot_batch).
                raise SlotsOverlap("a new slot overlaps one the space has") from None
            raise

    async def lock(self, slot_id: str) -> Slot:
        return (await self.lock_in_order([slot_id]))[slot_id]

    async def lock_in_order(self, slot_ids: Iterable[str]) -> dict[str, Slot]:
        """Locks slots in ascending id order, so opposite moves cannot deadlock."""
        return {slot_id: await self._one(_LOCK_SLOT, slot_id) for slot_id in sorted(set(slot_ids))}

    async def send_lock(self, slot_id: str) -> SentSlot:
        """The lock, sent; inside a pipeline it travels with the statements around it, and
        the slot is read once the pipeline has ended."""
        if not is_uuid(slot_id):
            return SentSlot(slot_id, None)
        params = {"slot_id": slot_id}
        return SentSlot(slot_id, await driver_sql.queue(self._session, _LOCK_SLOT, params))

    async def lock_if_exists(self, slot_id: str) -> Slot | None:
        try:
            return await self.lock(slot_id)
        except NotFound:
            return None

    async def get(self, slot_id: str) -> Slot:
        return await self._one(_GET_SLOT, slot_id)

    async def in_space(
        self, space_id: str, since: datetime | None, until: datetime | None
    ) -> list[Slot]:
        if not is_uuid(space_id):
            return []
        query = select(orm.slots).where(orm.slots.c.space_id == space_id)
        if since is not None:
            query = query.where(orm.slots.c.ends_at > since)
        if until is not None:
            query = query.where(orm.slots.c.starts_at < until)
        rows = await self._session.execute(query.order_by(orm.slots.c.starts_at))
        return [slot_of(row) for row in rows]

    async def require_sellable(self, slot: Slot, at: datetime) -> None:
        """Refuses a slot that cannot be sold at `at`. The rule is the database's
        `slot_refusal`, the one place it is written (it decides the card checkout too,
        inside card_checkout); the caller holds the slot's lock, so the answer stands."""
        params = {"slot_id": slot.slot_id, "at": at}
        row = await driver_sql.fetch_one(self._session, _SLOT_REFUSAL, params)
        refusal = row.refusal if row is not None else "not found"
        if refusal is not None:
            raise SlotUnavailable(f"slot {slot.slot_id} {refusal}")

    async def save(self, slot: Slot) -> None:
        values = {**slot_values(slot), "slot_id": slot.slot_id, "updated_at": datetime.now(UTC)}
        await driver_sql.execute(self._session, _SAVE_SLOT, values)

    async def _one(self, sql: str, slot_id: str) -> Slot:
        params = {"slot_id": slot_id}
        row = await driver_sql.fetch_one(self._session, sql, params) if is_uuid(slot_id) else None
        if row is None:
            raise NotFound(f"slot {slot_id} not found")
        return slot_of(row)


@dataclass(frozen=True)
class SentSlot:
    slot_id: str
    row: driver_sql.Queued | None  # None: a malformed id names no slot

    def slot(self) -> Slot:
        row = self.row.first() if self.row is not None else None
        if row is None:
            raise NotFound(f"slot {self.slot_id} not found")
        return slot_of(row)


# Checkout, cancel and reschedule run these; fixed SQL on the driver (see driver_sql).
_SLOT_COLUMNS = (
    "slot_id",
    "space_id",
    "starts_at",
    "ends_at",
    "price_amount",
    "currency",
    "state",
    "holder_booking_id",
    "closed_reason",
)
_GET_SLOT = driver_sql.select_sql(orm.slots, _SLOT_COLUMNS, by=("slot_id",))
_LOCK_SLOT = driver_sql.select_sql(orm.slots, _SLOT_COLUMNS, by=("slot_id",), for_update=True)
_SAVE_SLOT = driver_sql.update_sql(
    orm.slots,
    ("state", "holder_booking_id", "closed_reason", "price_amount", "currency", "updated_at"),
    by=("slot_id",),
)
_SLOT_REFUSAL = (
    'SELECT slot_refusal("state", "starts_at", %(at)s) AS refusal FROM "slots" '
    'WHERE "slot_id" = %(slot_id)s'
)
_ADD_BOOKING = driver_sql.insert_sql(orm.bookings, tuple(orm.bookings.c.keys()))
# A replayed checkout reads its booking on the driver too: the card checkout runs without
# an ORM session (UnitOfWorkFactory.transaction_on_driver).
_GET_BOOKING = driver_sql.select_sql(orm.bookings, tuple(orm.bookings.c.keys()), by=("booking_id",))
_LOCK_BOOKING = driver_sql.select_sql(
    orm.bookings, tuple(orm.bookings.c.keys()), by=("booking_id",), for_update=True
)


class BookingRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(self, booking: Booking) -> None:
        booking.created_at = booking.updated_at = datetime.now(UTC)
        with slot_taken_is_unavailable(booking.slot_id):
            await driver_sql.execute(self._session, _ADD_BOOKING, new_booking_values(booking))

    async def find(self, booking_id: str) -> Booking | None:
        return await self._find(booking_id, for_update=False)

    async def lock(self, booking_id: str) -> Booking | None:
        """The booking, locked; None for an id that names nothing."""
        return await self._find(booking_id, for_update=True)

    async def lock_in_org(self, org_id: str, booking_id: str) -> Booking:
        booking = await self.lock(booking_id)
        return _require_in_org(booking, org_id, booking_id)

    async def get_in_org(self, org_id: str, booking_id: str) -> Booking:
        booking = await self._find(booking_id, for_update=False)
        return _require_in_org(booking, org_id, booking_id)

    async def of_org(self, org_id: str, limit: int = 500) -> list[Booking]:
        t = orm.bookings.c
        query = (
            select(orm.bookings)
            .where(t.org_id == org_id)
            .order_by(t.created_at.desc(), t.booking_id)
            .limit(limit)
        )
        return [booking_of(row) for row in await self._session.execute(query)]

    async def save(self, booking: Booking) -> None:
        booking.updated_at = datetime.now(UTC)
        await self._session.execute(
            update(orm.bookings)
            .where(orm.bookings.c.booking_id == booking.booking_id)
            .values(booking_values(booking))
        )

    async def _find(self, booking_id: str, for_update: bool) -> Booking | None:
        if not is_uuid(booking_id):
            return None
        sql = _LOCK_BOOKING if for_update else _GET_BOOKING
        row = await driver_sql.fetch_one(self._session, sql, {"booking_id": booking_id})
        return booking_of(row) if row is not None else None


def _require_in_org(booking: Booking | None, org_id: str, booking_id: str) -> Booking:
    # Another organisation's booking is reported as missing: existence is not leaked.
    if booking is None or booking.org_id != org_id:
        raise NotFound(f"booking {booking_id} not found")
    return booking
