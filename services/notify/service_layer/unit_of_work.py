"""The notify service's unit of work: servicekit's, with the notify repositories."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import unit_of_work as kit
from servicekit.audit import AuditLog
from servicekit.incidents import Incidents
from services.notify.adapters import orm
from services.notify.adapters.repository import (
    AccessMailRepository,
    DeliveryRepository,
    StudioRepository,
)


@dataclass(frozen=True)
class Policy:
    """The time zone of a studio booking has not announced (yet): a configured one, else
    the default."""

    default_timezone: str
    timezones_by_space: dict[str, str]

    def timezone_of(self, space_id: str) -> str:
        return self.timezones_by_space.get(space_id, self.default_timezone)


class UnitOfWork(kit.UnitOfWork):
    async def timezone_of(self, space_id: str) -> str:
        """The studio's own zone, as booking announced it; else the configured one."""
        announced = await self.studios.timezone_of(space_id)
        return announced or self.policy.timezone_of(space_id)

    def __init__(self, session: AsyncSession, effects: kit.Effects, policy: Policy) -> None:
        super().__init__(session, effects)
        self.policy = policy
        self.deliveries = DeliveryRepository(session)
        self.access_mails = AccessMailRepository(session)
        self.studios = StudioRepository(session)
        self.incidents = Incidents(orm.eventing.incidents).within(session)
        self.audit = AuditLog(orm.eventing.audit_log).within(session)


UnitOfWorkFactory = kit.UnitOfWorkFactory[UnitOfWork]


def unit_of_work_factory(
    sessions: async_sessionmaker[AsyncSession], effects: kit.Effects, policy: Policy
) -> UnitOfWorkFactory:
    return UnitOfWorkFactory(sessions, lambda session: UnitOfWork(session, effects, policy))
