"""What the access service reported about PINs, per booking, slot and grant.

A disclosed PIN that is not yet revoked may still open the door, so the slot it opens must
not be sold again. Reports can arrive in any order: a revocation before its disclosure is
kept, and the later disclosure then finds it already revoked.
"""

from __future__ import annotations

from sqlalchemy import exists, select
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit import driver_sql
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
        params = {"booking_id": booking_id, "slot_id": slot_id, "grant_id": grant_id}
        await driver_sql.execute(self._session, _UPSERT[column], params)


def _upsert_sql(column: str) -> str:
    # The first report of each kind counts; a duplicate keeps the original time. On the
    # driver: every confirmed card saga reports a disclosure (servicekit.driver_sql).
    orm.pin_disclosures.c[column]  # a column the table has
    return (
        f'INSERT INTO "pin_disclosures" ("booking_id", "slot_id", "grant_id", "{column}")'
        " VALUES (%(booking_id)s, %(slot_id)s, %(grant_id)s, now())"
        " ON CONFLICT ON CONSTRAINT pin_disclosures_pkey"
        f' DO UPDATE SET "{column}" = coalesce("pin_disclosures"."{column}", now())'
    )


_UPSERT = {column: _upsert_sql(column) for column in ("disclosed_at", "revoked_at")}
