"""What the access service reported about PINs, per booking, slot and grant.

A disclosed PIN that is not yet revoked may still open the door, so the slot it opens must
not be sold again. Reports can arrive in any order: a revocation before its disclosure is
kept, and the later disclosure then finds it already revoked.
"""

from __future__ import annotations

from sqlalchemy import exists, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.booking.adapters import orm

_t = orm.pin_disclosures.c


class DisclosureRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def record_disclosed(self, booking_id: str, slot_id: str, grant_id: str) -> None:
        await self._upsert(booking_id, slot_id, grant_id, "disclosed_at")

    async def record_revoked(self, booking_id: str, slot_id: str, grant_id: str) -> None:
        await self._upsert(booking_id, slot_id, grant_id, "revoked_at")

    async def outstanding_for(self, booking_id: str, slot_id: str) -> bool:
        """Did this booking's PIN for this slot leak without a confirmed revocation?"""
        query = select(
            exists().where(
                _t.booking_id == booking_id,
                _t.slot_id == slot_id,
                _t.disclosed_at.is_not(None),
                _t.revoked_at.is_(None),
            )
        )
        return bool(await self._session.scalar(query))

    async def outstanding_on_slot(self, slot_id: str) -> bool:
        query = select(
            exists().where(
                _t.slot_id == slot_id, _t.disclosed_at.is_not(None), _t.revoked_at.is_(None)
            )
        )
        return bool(await self._session.scalar(query))

    async def _upsert(self, booking_id: str, slot_id: str, grant_id: str, column: str) -> None:
        statement = insert(orm.pin_disclosures).values(
            booking_id=booking_id, slot_id=slot_id, grant_id=grant_id, **{column: func.now()}
        )
        # The first report of each kind counts; a duplicate keeps the original time.
        await self._session.execute(
            statement.on_conflict_do_update(
                constraint="pin_disclosures_pkey",
                set_={column: func.coalesce(orm.pin_disclosures.c[column], func.now())},
            )
        )
