"""Repositories over one session: the only code that writes SQL for the payment tables."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Table, and_, func, or_, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit import driver_sql, tracing
from servicekit.contacts import Contact
from servicekit.rows import columns, record
from services.payment.adapters.orm import Tables
from services.payment.domain.money import Money
from services.payment.domain.orders import ORDER_PAID, ORDER_PENDING, SUBSCRIPTION, Order, Plan
from services.payment.domain.payment import Payment


def payment_of(row: Any) -> Payment:
    return record(
        Payment,
        row,
        amount=Money(row.amount, row.currency),
        contact=Contact(row.contact_email, row.contact_locale),
    )


_SNAPSHOT_COLUMNS = ("payment_id", "org_id", "booking_id", "order_id", "state", "attempt")
# What payment_values writes: the snapshot's columns and the converted ones.
_NEW_PAYMENT_COLUMNS = (
    *_SNAPSHOT_COLUMNS,
    *("amount", "currency", "contact_email", "contact_locale"),
)


def payment_values(payment: Payment) -> dict[str, Any]:
    """The columns of a new payment: its snapshot and where it stands."""
    return columns(
        payment,
        *_SNAPSHOT_COLUMNS,
        amount=payment.amount.amount,
        currency=payment.amount.currency,
        contact_email=payment.contact.email,
        contact_locale=payment.contact.locale,
    )


def order_of(row: Any) -> Order:
    return record(Order, row, price=Money(row.amount, row.currency))


def plan_of(row: Any) -> Plan:
    price = Money(row.amount, row.currency)
    return record(Plan, row, code=row.plan_code, version=row.plan_version, price=price)


@dataclass(frozen=True)
class _PaymentSql:
    """The statements each card saga runs on its payment, on the driver."""

    add: str
    trace: str
    move: str
    adopt: str

    @classmethod
    @functools.cache
    def of(cls, table: Table) -> _PaymentSql:
        name = f'"{table.name}"'
        new = (*_NEW_PAYMENT_COLUMNS, "hold_expires_at", "trace")
        return cls(
            add=driver_sql.insert_sql(table, new)
            + " ON CONFLICT (booking_id) DO NOTHING RETURNING payment_id",
            trace=driver_sql.select_sql(table, ("trace",), ("payment_id",)),
            move=f"UPDATE {name} SET state = %(target)s, updated_at = now()"
            " WHERE payment_id = %(payment_id)s AND state = %(current)s RETURNING payment_id",
            adopt=f"UPDATE {name} SET provider_payment_id = %(provider_payment_id)s,"
            " checkout_url = %(checkout_url)s, updated_at = now()"
            " WHERE payment_id = %(payment_id)s AND provider_payment_id IS NULL"
            " RETURNING payment_id",
        )


@functools.cache
def _select_by(table: Table, column: str, lock: bool) -> str:
    """Every column of the row whose `column` equals the value, locked if asked."""
    return driver_sql.select_sql(table, tuple(table.c.keys()), (column,), for_update=lock)


class PaymentRepository:
    def __init__(self, session: AsyncSession, tables: Tables) -> None:
        self._session = session
        self._t = tables.payments
        self._sql = _PaymentSql.of(tables.payments)

    async def add(self, payment: Payment, hold_expires_at: datetime | None = None) -> bool:
        """Inserts a new payment; False when the booking already has one (a re-request)."""
        values = {
            **payment_values(payment),
            "hold_expires_at": hold_expires_at,
            "trace": driver_sql.Jsonb(tracing.current_carrier()),
        }
        return bool(await driver_sql.fetch_all(self._session, self._sql.add, values))

    async def trace_of(self, payment_id: uuid.UUID) -> dict[str, str]:
        """The trace context the payment was made in."""
        params = {"payment_id": payment_id}
        row = await driver_sql.fetch_one(self._session, self._sql.trace, params)
        return {str(k): str(v) for k, v in (row.trace if row else {}).items()}

    async def get(self, payment_id: uuid.UUID, lock: bool = False) -> Payment | None:
        return await self._one("payment_id", payment_id, lock)

    async def for_booking(self, booking_id: str, lock: bool = False) -> Payment | None:
        return await self._one("booking_id", booking_id, lock)

    async def for_order(self, order_id: uuid.UUID) -> Payment | None:
        return await self._one("order_id", order_id, False)

    async def by_provider_id(self, provider_payment_id: str, lock: bool = False) -> Payment | None:
        return await self._one("provider_payment_id", provider_payment_id, lock)

    async def _one(self, column: str, value: object, lock: bool) -> Payment | None:
        # On the driver: a saga reads its payment several times, and through SQLAlchemy
        # each read cost several times the driver's CPU (servicekit.driver_sql).
        sql = _select_by(self._t, column, lock)
        row = await driver_sql.fetch_one(self._session, sql, {column: value})
        return payment_of(row) if row is not None else None

    async def move(self, payment_id: uuid.UUID, current: str, target: str) -> bool:
        """The conditional transition: applies only if the state is still `current`."""
        params = {"payment_id": payment_id, "current": current, "target": target}
        return bool(await driver_sql.fetch_all(self._session, self._sql.move, params))

    async def adopt_remote(
        self, payment_id: uuid.UUID, provider_payment_id: str, checkout_url: str
    ) -> bool:
        """Records the gateway's id once; False when it was already known."""
        params = {
            "payment_id": payment_id,
            "provider_payment_id": provider_payment_id,
            "checkout_url": checkout_url,
        }
        return bool(await driver_sql.fetch_all(self._session, self._sql.adopt, params))

    async def mark_reconciled(self, payment_id: uuid.UUID) -> None:
        await self._session.execute(
            update(self._t)
            .where(self._t.c.payment_id == payment_id)
            .values(reconciled_at=func.now())
        )

    async def stale(self, states: Sequence[str], older_than_s: float, limit: int) -> list[Payment]:
        """Payments that stayed in `states` for longer than the threshold: lost notifications."""
        t = self._t.c
        threshold = func.now() - func.make_interval(0, 0, 0, 0, 0, 0, older_than_s)
        query = (
            select(self._t)
            .where(t.state.in_(states), func.coalesce(t.reconciled_at, t.updated_at) < threshold)
            .order_by(t.updated_at)
            .limit(limit)
        )
        return [payment_of(row) for row in (await self._session.execute(query)).all()]

    async def listed(self, state: str | None, limit: int = 500) -> list[Payment]:
        query = select(self._t).order_by(self._t.c.created_at.desc()).limit(limit)
        if state:
            query = query.where(self._t.c.state == state)
        return [payment_of(row) for row in (await self._session.execute(query)).all()]


class OrderRepository:
    def __init__(self, session: AsyncSession, tables: Tables) -> None:
        self._session = session
        self._tables = tables

    async def lock_organisation(self, org_id: str) -> None:
        # Serialises one organisation's checkouts: concurrent replays wait, not race.
        await self._session.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
            {"key": f"orders:{org_id}"},
        )

    async def plan(self, code: str, version: int) -> Plan | None:
        t = self._tables.plans.c
        query = select(self._tables.plans).where(t.plan_code == code, t.plan_version == version)
        row = (await self._session.execute(query)).first()
        return plan_of(row) if row is not None else None

    async def add_plan(self, plan: Plan) -> bool:
        statement = (
            insert(self._tables.plans)
            .values(
                plan_code=plan.code,
                plan_version=plan.version,
                kind=plan.kind,
                name=plan.name,
                amount=plan.price.amount,
                currency=plan.price.currency,
                entries=plan.entries,
                period_days=plan.period_days,
            )
            .on_conflict_do_nothing(constraint="plans_pkey")
            .returning(self._tables.plans.c.plan_code)
        )
        return (await self._session.execute(statement)).first() is not None

    async def plans(self) -> list[Plan]:
        t = self._tables.plans.c
        query = select(self._tables.plans).order_by(t.plan_code, t.plan_version)
        return [plan_of(row) for row in (await self._session.execute(query)).all()]

    async def blocking_subscription(self, org_id: str) -> uuid.UUID | None:
        """An open initial subscription order or a paid period still running."""
        t = self._tables.orders.c
        query = (
            select(t.order_id)
            .where(
                t.org_id == org_id,
                t.kind == SUBSCRIPTION,
                or_(
                    t.state == ORDER_PENDING,
                    and_(t.state == ORDER_PAID, t.period_ends_at > func.now()),
                ),
            )
            .order_by(t.created_at)
            .limit(1)
        )
        found = (await self._session.execute(query)).scalar_one_or_none()
        return found if isinstance(found, uuid.UUID) else None

    async def add(self, order: Order, user: str) -> Order:
        """Stores a new order and answers it as stored: the database gives its created_at,
        which the CreateOrder answer carries (the contract has no order without one)."""
        stored = await self._session.execute(
            self._tables.orders.insert()
            .values(
                order_id=order.order_id,
                org_id=order.org_id,
                user=user,
                state=order.state,
                plan_code=order.plan_code,
                plan_version=order.plan_version,
                kind=order.kind,
                amount=order.price.amount,
                currency=order.price.currency,
                entries=order.entries,
                period_days=order.period_days,
            )
            .returning(self._tables.orders.c.created_at)
        )
        return replace(order, created_at=stored.scalar_one())

    async def get(self, order_id: uuid.UUID) -> Order | None:
        query = select(self._tables.orders).where(self._tables.orders.c.order_id == order_id)
        row = (await self._session.execute(query)).first()
        return order_of(row) if row is not None else None

    async def move(self, order_id: uuid.UUID, current: str, target: str) -> bool:
        t = self._tables.orders.c
        values: dict[str, Any] = {"state": target, "updated_at": func.now()}
        if target == ORDER_PAID:
            values["period_starts_at"] = func.now()
            values["period_ends_at"] = func.now() + func.make_interval(0, 0, 0, t.period_days)
        result = await self._session.execute(
            update(self._tables.orders)
            .where(t.order_id == order_id, t.state == current)
            .values(**values)
            .returning(t.order_id)
        )
        return result.first() is not None
