"""Pass balances and their ledger: the balance row is the lock, the ledger the history."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.booking.adapters import orm
from services.booking.domain.model import LedgerEntry, PassBalance


@dataclass(frozen=True)
class LedgerLine:
    delta: int
    reason: str
    at: datetime


class PassRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def lock(self, org_id: str) -> PassBalance:
        """The organisation's balance, locked; created at zero on first use so it can be."""
        await self._session.execute(
            insert(orm.pass_balances)
            .values(org_id=org_id, balance=0)
            .on_conflict_do_nothing(index_elements=["org_id"])
        )
        balance = await self._session.scalar(
            select(orm.pass_balances.c.balance)
            .where(orm.pass_balances.c.org_id == org_id)
            .with_for_update()
        )
        return PassBalance(org_id, int(balance or 0))

    async def lock_existing(self, org_id: str) -> PassBalance | None:
        """The balance, locked, without creating one (a redemption needs an entry anyway)."""
        balance = await self._session.scalar(
            select(orm.pass_balances.c.balance)
            .where(orm.pass_balances.c.org_id == org_id)
            .with_for_update()
        )
        return None if balance is None else PassBalance(org_id, int(balance))

    async def apply(self, balance: PassBalance, entry: LedgerEntry) -> bool:
        """Writes the entry and the new balance; False if that reference was applied before."""
        written = await self._session.execute(
            insert(orm.pass_ledger)
            .values(
                org_id=entry.org_id,
                delta=entry.delta,
                reason=entry.reason,
                reference=entry.reference,
            )
            .on_conflict_do_nothing(constraint=orm.LEDGER_REFERENCE_ONCE)
            .returning(orm.pass_ledger.c.entry_id)
        )
        if written.first() is None:
            return False
        await self._session.execute(
            update(orm.pass_balances)
            .where(orm.pass_balances.c.org_id == balance.org_id)
            .values(balance=balance.balance, updated_at=func.now())
        )
        return True

    async def balance(self, org_id: str) -> int:
        value = await self._session.scalar(
            select(orm.pass_balances.c.balance).where(orm.pass_balances.c.org_id == org_id)
        )
        return int(value or 0)

    async def ledger(self, org_id: str) -> list[LedgerLine]:
        t = orm.pass_ledger.c
        rows = await self._session.execute(
            select(t.delta, t.reason, t.at).where(t.org_id == org_id).order_by(t.entry_id)
        )
        return [LedgerLine(row.delta, row.reason, row.at) for row in rows]
