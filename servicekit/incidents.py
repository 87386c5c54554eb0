"""Incidents: inconsistencies that code must not repair alone, kept for an operator.

Every service has the same table (servicekit.schema). Code opens an incident in the
transaction that found the problem; a repeated sighting of an open one adds nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, Table, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

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

    async def listed(self, session: AsyncSession, state: str | None) -> Sequence[Row[Any]]:
        query = select(self.table).order_by(self.table.c.opened_at.desc())
        if state:
            query = query.where(self.table.c.state == state)
        return (await session.execute(query)).all()
