"""Snapshots of the services' and the gateway's databases, read as each database's owner.

Statements are built from the services' own SQLAlchemy tables, so a renamed column breaks
here at once instead of reading the wrong thing. Each database is read in one repeatable
read transaction: one consistent moment per store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from chaos.auditor import snapshots as s
from gateway_bff.store import orm as gateway_orm
from servicekit.schema import FAILED, PENDING, EventingTables
from services.access.adapters import orm as access_orm
from services.booking.adapters import orm as booking_orm
from services.notify.adapters import orm as notify_orm
from services.payment.adapters.orm import build_tables

PAYMENT = build_tables()
CONNECT_TIMEOUT_S = 10


@asynccontextmanager
async def snapshot_of(env: Mapping[str, str], part: str) -> AsyncIterator[AsyncConnection]:
    url = env[f"{part.upper()}_MIGRATION_DATABASE_URL"]
    engine = create_async_engine(
        url, pool_size=1, connect_args={"connect_timeout": CONNECT_TIMEOUT_S}
    )
    try:
        async with engine.connect() as connection:
            await connection.execution_options(isolation_level="REPEATABLE READ")
            async with connection.begin():
                await connection.execute(sa.text("SET TRANSACTION READ ONLY"))
                yield connection
    finally:
        await engine.dispose()


async def _rows(connection: AsyncConnection, statement: Any) -> list[sa.Row[Any]]:
    return list((await connection.execute(statement)).all())


async def read_booking(connection: AsyncConnection, stores: s.Stores) -> None:
    slots, bookings = booking_orm.slots, booking_orm.bookings
    for r in await _rows(connection, sa.select(slots)):
        stores.slots.append(
            s.Slot(r.slot_id, r.state, r.holder_booking_id, r.closed_reason, r.updated_at)
        )
    for r in await _rows(connection, sa.select(bookings)):
        stores.bookings.append(
            s.Booking(
                r.booking_id,
                r.org_id,
                r.slot_id,
                r.state,
                r.payment_mode,
                r.price_amount,
                r.currency,
                r.valid_from,
                r.valid_to,
                r.payment_id,
                r.hold_expires_at,
                r.moves,
                r.updated_at,
            )
        )
    ledger = booking_orm.pass_ledger
    for r in await _rows(connection, sa.select(ledger)):
        stores.ledger.append(s.LedgerEntry(r.entry_id, r.org_id, r.delta, r.reason, r.reference))
    for r in await _rows(connection, sa.select(booking_orm.pass_balances)):
        stores.balances.append(s.PassBalance(r.org_id, r.balance))
    await read_eventing(connection, stores, "booking", booking_orm.eventing)


async def read_payment(connection: AsyncConnection, stores: s.Stores) -> None:
    for r in await _rows(connection, sa.select(PAYMENT.payments)):
        stores.payments.append(
            s.Payment(
                str(r.payment_id),
                r.state,
                r.amount,
                r.currency,
                r.booking_id,
                _text(r.order_id),
                r.provider_payment_id,
                r.updated_at,
            )
        )
    for r in await _rows(connection, sa.select(PAYMENT.orders)):
        stores.orders.append(
            s.Order(
                str(r.order_id),
                r.org_id,
                r.state,
                r.kind,
                r.amount,
                r.currency,
                r.entries,
                r.updated_at,
            )
        )
    await read_eventing(connection, stores, "payment", PAYMENT.eventing)


async def read_access(connection: AsyncConnection, stores: s.Stores) -> None:
    for r in await _rows(connection, sa.select(access_orm.grants)):
        stores.grants.append(
            s.Grant(
                r.grant_id,
                r.booking_id,
                r.slot_id,
                r.device_id,
                r.valid_from,
                r.valid_to,
                r.state,
                r.provision_id,
                r.failure,
                r.updated_at,
            )
        )
    for r in await _rows(connection, sa.select(access_orm.provisions)):
        stores.provisions.append(
            s.Provision(r.provision_id, r.grant_id, r.state, r.provider_code_id, r.updated_at)
        )
    disclosures = access_orm.disclosures
    statement = sa.select(disclosures.c.grant_id, disclosures.c.booking_id, disclosures.c.purpose)
    for r in await _rows(connection, statement.distinct()):
        stores.disclosures.append(s.Disclosure(r.grant_id, r.booking_id, r.purpose))
    await read_eventing(connection, stores, "access", access_orm.eventing)


async def read_notify(connection: AsyncConnection, stores: s.Stores) -> None:
    deliveries = notify_orm.deliveries
    for r in await _rows(connection, sa.select(deliveries)):
        stores.deliveries.append(
            s.Delivery(
                r.delivery_key,
                r.source,
                r.template,
                r.state,
                r.last_error,
                r.booking_id,
                r.updated_at,
            )
        )
    await read_eventing(connection, stores, "notify", notify_orm.eventing)


async def read_gateway(connection: AsyncConnection, stores: s.Stores) -> None:
    for r in await _rows(connection, sa.select(gateway_orm.orgs.c.org_id)):
        stores.orgs.add(str(r.org_id))


async def read_eventing(
    connection: AsyncConnection, stores: s.Stores, service: str, tables: EventingTables
) -> None:
    """The outbox, inbox and timer rows that wait or failed, and every incident."""
    outbox, inbox, timers = tables.outbox, tables.inbox, tables.timers
    unfinished = (PENDING, FAILED)
    for r in await _rows(connection, sa.select(outbox).where(outbox.c.state.in_(unfinished))):
        stores.work.append(
            s.WorkRow(
                service,
                "outbox",
                str(r.effect_id),
                r.event_type,
                r.state,
                r.next_attempt_at,
                r.last_error or "",
            )
        )
    for r in await _rows(connection, sa.select(inbox).where(inbox.c.state == FAILED)):
        stores.work.append(
            s.WorkRow(
                service,
                "inbox",
                f"{r.consumer}:{r.event_id}",
                r.event_type,
                r.state,
                r.created_at,
                r.last_error or "",
            )
        )
    for r in await _rows(connection, sa.select(timers).where(timers.c.state.in_(unfinished))):
        stores.work.append(
            s.WorkRow(
                service,
                "timers",
                str(r.timer_id),
                f"{r.kind}:{r.aggregate_id}",
                r.state,
                r.due_at,
                r.last_error or "",
            )
        )
    for r in await _rows(connection, sa.select(tables.incidents)):
        stores.incidents.append(
            s.Incident(
                service,
                str(r.incident_id),
                r.kind,
                r.subject_id,
                r.state,
                r.detail,
                r.decision or "",
            )
        )


def _text(value: object) -> str | None:
    return None if value is None else str(value)


READERS = {
    "booking": read_booking,
    "payment": read_payment,
    "access": read_access,
    "notify": read_notify,
    "gateway": read_gateway,
}
