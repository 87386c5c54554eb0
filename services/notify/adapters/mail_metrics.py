"""The notify service's own gauge: its mail deliveries by state (the states it does not
hold at the moment at 0, so a rule can compare them from the start)."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.metrics.sampling import GaugeFamily, Probe, Reading, counted
from services.notify.adapters import orm
from services.notify.domain.model import DeliveryState

MAILS = GaugeFamily(
    "liftfit_mails",
    "Mail deliveries by state: queued, sending, sent, failed, unknown (outcome not known)",
    ("status",),
)


def mails_probe(sessions: async_sessionmaker[AsyncSession]) -> Probe:
    d = orm.deliveries.c
    query = select(d.state, func.count()).group_by(d.state)

    async def read() -> Reading:
        async with sessions() as session:
            rows = (await session.execute(query)).all()
        known = [state.value for state in DeliveryState]
        return {MAILS.name: counted([(state, n) for state, n in rows], known)}

    return Probe("mails", (MAILS,), read)
