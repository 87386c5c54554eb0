"""Spaces, and money that arrived without a booking to own it."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.refusals import NotFound
from services.booking.adapters import orm
from services.booking.adapters.rows import is_uuid
from services.booking.domain.model import Space


class SpaceRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(self, space: Space) -> None:
        await self._session.execute(
            orm.spaces.insert().values(
                space_id=space.space_id, name=space.name, timezone=space.timezone
            )
        )

    async def require(self, space_id: str) -> None:
        found = is_uuid(space_id) and await self._session.scalar(
            select(orm.spaces.c.space_id).where(orm.spaces.c.space_id == space_id)
        )
        if not found:
            raise NotFound(f"space {space_id} not found")

    async def all(self) -> list[Space]:
        rows = await self._session.execute(select(orm.spaces).order_by(orm.spaces.c.name))
        return [Space(str(row.space_id), row.name, row.timezone) for row in rows]


class UnownedPaymentRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def record(self, payment_id: str, booking_id: str, reason: str) -> bool:
        """True the first time this payment is found without an owner."""
        written = await self._session.execute(
            insert(orm.unowned_payments)
            .values(payment_id=payment_id, booking_id=booking_id, reason=reason)
            .on_conflict_do_nothing(index_elements=["payment_id"])
            .returning(orm.unowned_payments.c.payment_id)
        )
        return written.first() is not None
