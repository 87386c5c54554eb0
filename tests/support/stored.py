"""Searching everything a service stored for a value that must not be there (a raw key, a PIN)."""

from __future__ import annotations

from psycopg import sql
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit import driver_sql

_COLUMNS = (
    "SELECT table_name, column_name, data_type FROM information_schema.columns"
    " WHERE table_schema = 'public'"
)


async def columns_holding(session: AsyncSession, needle: str) -> list[str]:
    """`table.column` of every stored value that contains `needle`, as text or as bytes."""
    found = []
    for table, column, data_type in await driver_sql.fetch_all(session, _COLUMNS, {}):
        if data_type == "bytea":
            condition = sql.SQL("position(convert_to(%(needle)s, 'UTF8') in {}) > 0")
        else:
            condition = sql.SQL("position(%(needle)s in {}::text) > 0")
        query = sql.SQL("SELECT 1 FROM {} WHERE {} LIMIT 1").format(
            sql.Identifier(table), condition.format(sql.Identifier(column))
        )
        rows = await driver_sql.fetch_all(session, query.as_string(), {"needle": needle})
        if rows:
            found.append(f"{table}.{column}")
    return found
