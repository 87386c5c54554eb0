"""A service's records of bookings by state, for the drift checks that join two services'
facts: one query shape over whichever table holds the service's records."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.operations.hooks import BookingState, StateQuery


async def states_in(
    session: AsyncSession,
    booking_id: ColumnElement[str],
    state: ColumnElement[str],
    since: ColumnElement[datetime],
    query: StateQuery,
    *also: ColumnElement[bool],
) -> list[BookingState]:
    """The records the query names, read from these columns of one table; `also` narrows an
    ask by state (a window not yet over, a booking rather than an order)."""
    statement = select(booking_id, state, since)
    if query.booking_ids:
        statement = statement.where(booking_id.in_(query.booking_ids))
    else:
        statement = statement.where(state == query.state, since < query.before, *also)
    statement = statement.order_by(since.desc()).limit(query.limit)
    return [
        BookingState(booking_id=str(found), state=str(now_in), since=changed)
        for found, now_in, changed in await session.execute(statement)
    ]
