"""The access service's unit of work: servicekit's, with the access repositories."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import unit_of_work as kit
from servicekit.incidents import Incidents
from services.access.adapters import orm
from services.access.adapters.pin_vault import PinVault
from services.access.adapters.repository import (
    CredentialRepository,
    DisclosureRepository,
    EndedBookingRepository,
    FindingRepository,
    GrantRepository,
    ProvisionRepository,
)


@dataclass(frozen=True)
class Devices:
    """Which lock opens the door of a space: a space's own device, else the default one."""

    default: str
    by_space: dict[str, str]

    def of_space(self, space_id: str) -> str:
        return self.by_space.get(space_id, self.default)


@dataclass(frozen=True)
class Policy:
    """The service's configuration as the handlers see it."""

    devices: Devices
    activation_lead: timedelta  # how long before its window a credential may be created
    alias_prefix: str = "liftfit"


class UnitOfWork(kit.UnitOfWork):
    def __init__(
        self, session: AsyncSession, effects: kit.Effects, policy: Policy, vault: PinVault
    ) -> None:
        super().__init__(session, effects)
        self.policy = policy
        self.grants = GrantRepository(session)
        self.provisions = ProvisionRepository(session)
        self.credentials = CredentialRepository(session, vault)
        self.disclosures = DisclosureRepository(session)
        self.ended_bookings = EndedBookingRepository(session)
        self.findings = FindingRepository(session)
        self.incidents = Incidents(orm.eventing.incidents).within(session)


UnitOfWorkFactory = kit.UnitOfWorkFactory[UnitOfWork]


def unit_of_work_factory(
    sessions: async_sessionmaker[AsyncSession],
    effects: kit.Effects,
    policy: Policy,
    vault: PinVault,
) -> UnitOfWorkFactory:
    return UnitOfWorkFactory(sessions, lambda session: UnitOfWork(session, effects, policy, vault))
