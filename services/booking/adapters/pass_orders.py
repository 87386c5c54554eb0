"""Pass orders as the payment service's events described them (domain.pass_orders)."""

from __future__ import annotations

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.booking.adapters import orm
from services.booking.domain.model import Money
from services.booking.domain.pass_orders import PassOrder


class PassOrderRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def lock(self, order_id: str) -> PassOrder:
        """The order, locked; first heard of now if it was not before."""
        await self._session.execute(
            insert(orm.pass_orders)
            .values(order_id=order_id)
            .on_conflict_do_nothing(index_elements=["order_id"])
        )
        order = await self.lock_existing(order_id)
        assert order is not None, "inserted above"
        return order

    async def lock_existing(self, order_id: str) -> PassOrder | None:
        """The order, locked; None when nothing was heard of it."""
        t = orm.pass_orders.c
        query = select(orm.pass_orders).where(t.order_id == order_id).with_for_update()
        row = (await self._session.execute(query)).first()
        if row is None:
            return None
        paid = None if row.paid_amount is None else Money(row.paid_amount, row.paid_currency)
        return PassOrder(order_id, row.payment_id, paid, row.org_id, row.entries)

    async def save(self, order: PassOrder) -> None:
        paid = order.paid
        await self._session.execute(
            update(orm.pass_orders)
            .where(orm.pass_orders.c.order_id == order.order_id)
            .values(
                payment_id=order.payment_id,
                paid_amount=paid.amount if paid else None,
                paid_currency=paid.currency if paid else None,
                org_id=order.org_id,
                entries=order.entries,
                updated_at=func.now(),
            )
        )
