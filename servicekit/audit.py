"""The audit log: every deliberate operator decision, in the service that carried it out."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table
from sqlalchemy.ext.asyncio import AsyncSession


async def record(
    session: AsyncSession, table: Table, actor: str, action: str, subject: str, **detail: Any
) -> None:
    await session.execute(
        table.insert().values(actor=actor, action=action, subject=subject, detail=detail)
    )
