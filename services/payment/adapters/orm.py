"""The payment database: tables, constraints and the eventing tables of servicekit."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import UUID

from servicekit.schema import EventingTables, add_eventing_tables, now_column


@dataclass(frozen=True)
class Tables:
    metadata: MetaData
    plans: Table
    orders: Table
    payments: Table
    eventing: EventingTables


def _plans(metadata: MetaData) -> Table:
    return Table(
        "plans",
        metadata,
        Column("plan_code", Text, nullable=False),
        Column("plan_version", Integer, nullable=False),
        Column("kind", Text, nullable=False),
        Column("name", Text, nullable=False),
        Column("amount", BigInteger, nullable=False),
        Column("currency", Text, nullable=False),
        Column("entries", Integer, nullable=False),
        Column("period_days", Integer, nullable=False),
        now_column("created_at"),
        PrimaryKeyConstraint("plan_code", "plan_version", name="plans_pkey"),
        CheckConstraint("kind IN ('pass', 'subscription')", name="plans_kind"),
    )


def _orders(metadata: MetaData) -> Table:
    table = Table(
        "orders",
        metadata,
        Column("order_id", UUID(as_uuid=True), primary_key=True),
        Column("org_id", Text, nullable=False),
        Column("user_name", Text, nullable=False),
        Column("state", Text, nullable=False),
        # A copy of the plan version: a later catalogue change never changes an order.
        Column("plan_code", Text, nullable=False),
        Column("plan_version", Integer, nullable=False),
        Column("kind", Text, nullable=False),
        Column("amount", BigInteger, nullable=False),
        Column("currency", Text, nullable=False),
        Column("entries", Integer, nullable=False),
        Column("period_days", Integer, nullable=False),
        Column("period_starts_at", DateTime(timezone=True)),
        Column("period_ends_at", DateTime(timezone=True)),
        now_column("created_at"),
        now_column("updated_at"),
    )
    # The last guard behind the organisation lock: one open initial subscription order.
    Index(
        "orders_one_open_subscription",
        table.c.org_id,
        unique=True,
        postgresql_where=text("kind = 'subscription' AND state = 'pending'"),
    )
    return table


def _payments(metadata: MetaData) -> Table:
    return Table(
        "payments",
        metadata,
        Column("payment_id", UUID(as_uuid=True), primary_key=True),
        Column("org_id", Text, nullable=False),
        Column("booking_id", Text, unique=True),
        Column("order_id", UUID(as_uuid=True), unique=True),
        Column("state", Text, nullable=False),
        Column("amount", BigInteger, nullable=False),
        Column("currency", Text, nullable=False),
        Column("attempt", Integer, nullable=False, server_default="1"),
        Column("provider_payment_id", Text, unique=True),
        Column("checkout_url", Text),
        Column("hold_expires_at", DateTime(timezone=True)),
        Column("reconciled_at", DateTime(timezone=True)),
        now_column("created_at"),
        now_column("updated_at"),
        CheckConstraint("(booking_id IS NULL) <> (order_id IS NULL)", name="payments_one_owner"),
        CheckConstraint(
            "state IN ('pending','paid','failed','expired','cancelled',"
            "'refund_pending','refunded','refund_failed')",
            name="payments_state",
        ),
    )


def build_tables() -> Tables:
    metadata = MetaData()
    return Tables(
        metadata=metadata,
        plans=_plans(metadata),
        orders=_orders(metadata),
        payments=_payments(metadata),
        eventing=add_eventing_tables(metadata),
    )


def schema_metadata() -> MetaData:
    """What the migrations must reproduce (servicekit.migrations)."""
    return build_tables().metadata
