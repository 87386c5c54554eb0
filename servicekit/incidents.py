"""Incidents: inconsistencies that code must not repair alone, kept for an operator.

Every service has the same table (servicekit.schema). Code opens an incident in the
transaction that found the problem; a repeated sighting of an open one adds nothing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, Table, func, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.rows import record
from servicekit.schema import OPEN, RESOLVED

MAX_DETAIL = 2000


class Incidents:
    def __init__(self, table: Table) -> None:
        self.table = table

    async def open(self, session: AsyncSession, kind: str, subject_id: str, detail: str) -> bool:
        """Opens an incident; False when the same one is already open."""
        statement = (
            pg_insert(self.table)
            .values(
                incident_id=uuid.uuid4(),
                kind=kind,
                subject_id=subject_id,
                detail=detail[:MAX_DETAIL].replace("\x00", "?"),
            )
            .on_conflict_do_nothing(
                index_elements=["kind", "subject_id"], index_where=text("state = 'open'")
            )
            .returning(self.table.c.incident_id)
        )
        return (await session.execute(statement)).first() is not None

    async def resolve(
        self, session: AsyncSession, subject_id: str, by: str, decision: str, note: str
    ) -> int:
        """Resolves the subject's open incidents with the operator's decision; how many."""
        t = self.table.c
        result = await session.execute(
            update(self.table)
            .where(t.subject_id == subject_id, t.state == OPEN)
            .values(
                state=RESOLVED, resolved_at=func.now(), resolved_by=by, decision=decision, note=note
            )
        )
        return int(getattr(result, "rowcount", 0) or 0)

    async def resolve_one(
        self, session: AsyncSession, incident_id: uuid.UUID, by: str, decision: str, note: str
    ) -> Resolution | None:
        """Resolves one incident by its id; None when no incident has that id.

        An incident already resolved is returned as it is (`newly` False): a repeated
        decision changes nothing, so the caller records it once. Two operators resolving
        the same incident at once are serialised by the row lock of the update; the second
        finds it resolved.
        """
        t = self.table.c
        resolved = await session.execute(
            update(self.table)
            .where(t.incident_id == incident_id, t.state == OPEN)
            .values(
                state=RESOLVED, resolved_at=func.now(), resolved_by=by, decision=decision, note=note
            )
            .returning(self.table)
        )
        row = resolved.first()
        if row is not None:
            return Resolution(incident_of(row), newly=True)
        query = select(self.table).where(t.incident_id == incident_id)
        found = (await session.execute(query)).first()
        return Resolution(incident_of(found), newly=False) if found is not None else None

    async def listed(self, session: AsyncSession, state: str | None) -> list[Incident]:
        query = select(self.table).order_by(self.table.c.opened_at.desc())
        if state:
            query = query.where(self.table.c.state == state)
        return [incident_of(row) for row in await session.execute(query)]

    def within(self, session: AsyncSession) -> IncidentsInSession:
        return IncidentsInSession(self, session)


class IncidentsInSession:
    """A service's incidents inside one transaction (a unit of work's `incidents`)."""

    def __init__(self, incidents: Incidents, session: AsyncSession) -> None:
        self._incidents = incidents
        self._session = session

    async def open(self, kind: str, subject_id: str, detail: str) -> bool:
        """Opens an incident; a second sighting of an open one adds nothing."""
        return await self._incidents.open(self._session, kind, subject_id, detail)

    async def resolve(self, subject_id: str, by: str, decision: str, note: str) -> int:
        """Resolves the subject's open incidents with an operator's decision."""
        return await self._incidents.resolve(self._session, subject_id, by, decision, note)

    async def listed(self, state: str | None) -> list[Incident]:
        return await self._incidents.listed(self._session, state)


@dataclass(frozen=True)
class Incident:
    incident_id: uuid.UUID
    kind: str
    subject_id: str
    state: str
    detail: str
    opened_at: datetime
    resolved_at: datetime | None = None
    resolved_by: str | None = None
    decision: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Resolution:
    """An incident after an operator's decision; `newly` when this decision resolved it."""

    incident: Incident
    newly: bool


def incident_of(row: Row[Any]) -> Incident:
    return record(Incident, row)
