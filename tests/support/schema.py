"""Tables for the mechanics tests, which prove servicekit without any service's schema.

Services never create tables (their schemas come from migrations); these tests use
servicekit's eventing tables beside tables of their own, created directly.
"""

from __future__ import annotations

from sqlalchemy import MetaData
from sqlalchemy.ext.asyncio import AsyncEngine


async def create_tables(engine: AsyncEngine, metadata: MetaData) -> None:
    async with engine.begin() as connection:
        await connection.run_sync(metadata.create_all)
