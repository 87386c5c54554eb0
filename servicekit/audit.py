"""The audit log: who decided what about which subject, written in the transaction that
carries the decision out (an operator's replay, a delivery sent again). Every service has
the same table (servicekit.schema); rows are never pruned."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Table, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.rows import record


@dataclass(frozen=True)
class AuditEntry:
    audit_id: int
    at: datetime
    actor: str
    action: str
    subject: str
    detail: dict[str, Any]


class AuditLog:
    def __init__(self, table: Table) -> None:
        self.table = table

    def within(self, session: AsyncSession) -> AuditLogInSession:
        return AuditLogInSession(self.table, session)


class AuditLogInSession:
    def __init__(self, table: Table, session: AsyncSession) -> None:
        self._table = table
        self._session = session

    async def record(self, actor: str, action: str, subject: str, detail: dict[str, Any]) -> None:
        await self._session.execute(
            insert(self._table).values(actor=actor, action=action, subject=subject, detail=detail)
        )

    async def of_subject(self, subject: str) -> list[dict[str, Any]]:
        t = self._table.c
        query = select(self._table).where(t.subject == subject).order_by(t.audit_id)
        return [dict(row._mapping) for row in await self._session.execute(query)]

    async def newest(self, subject: str | None, limit: int) -> list[AuditEntry]:
        """The newest entries first, of one subject or of all."""
        t = self._table.c
        query = select(self._table).order_by(t.audit_id.desc()).limit(limit)
        if subject:
            query = query.where(t.subject == subject)
        return [record(AuditEntry, row) for row in await self._session.execute(query)]
