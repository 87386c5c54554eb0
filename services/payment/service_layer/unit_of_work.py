"""The payment service's unit of work: servicekit's, with the payment repositories."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import unit_of_work as kit
from servicekit.idempotency_keys import IdempotencyKeys
from servicekit.incidents import Incidents
from services.payment.adapters.orm import Tables
from services.payment.adapters.repository import OrderRepository, PaymentRepository


class UnitOfWork(kit.UnitOfWork):
    def __init__(
        self, session: AsyncSession, tables: Tables, effects: kit.Effects, keys: IdempotencyKeys
    ) -> None:
        super().__init__(session, effects)
        self.idempotency = keys.within(session)
        self.payments = PaymentRepository(session, tables)
        self.orders = OrderRepository(session, tables)
        self.incidents = Incidents(tables.eventing.incidents).within(session)


UnitOfWorkFactory = kit.UnitOfWorkFactory[UnitOfWork]


def unit_of_work_factory(
    sessions: async_sessionmaker[AsyncSession],
    tables: Tables,
    effects: kit.Effects,
    keys: IdempotencyKeys,
) -> UnitOfWorkFactory:
    return UnitOfWorkFactory(sessions, lambda session: UnitOfWork(session, tables, effects, keys))
