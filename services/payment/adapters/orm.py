"""The payment database: tables, constraints and the eventing tables of servicekit."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB, UUID

from servicekit.schema import EventingTables, add_eventing_tables, now_column


@dataclass(frozen=True)
class Tables:
    metadata: sa.MetaData
    plans: sa.Table
    orders: sa.Table
    payments: sa.Table
    eventing: EventingTables


def _plans(metadata: sa.MetaData) -> sa.Table:
    return sa.Table(
        "plans",
        metadata,
        sa.Column("plan_code", sa.Text, nullable=False),
        sa.Column("plan_version", sa.Integer, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("amount", sa.BigInteger, nullable=False),
        sa.Column("currency", sa.Text, nullable=False),
        sa.Column("entries", sa.Integer, nullable=False),
        sa.Column("period_days", sa.Integer, nullable=False),
        now_column("created_at"),
        sa.PrimaryKeyConstraint("plan_code", "plan_version", name="plans_pkey"),
        sa.CheckConstraint("kind IN ('pass', 'subscription')", name="plans_kind"),
    )


def _orders(metadata: sa.MetaData) -> sa.Table:
    table = sa.Table(
        "orders",
        metadata,
        sa.Column("order_id", UUID(as_uuid=True), primary_key=True),
        sa.Column("org_id", sa.Text, nullable=False),
        sa.Column("user", sa.Text, nullable=False),
        sa.Column("state", sa.Text, nullable=False),
        # A copy of the plan version: a later catalogue change never changes an order.
        sa.Column("plan_code", sa.Text, nullable=False),
        sa.Column("plan_version", sa.Integer, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("amount", sa.BigInteger, nullable=False),
        sa.Column("currency", sa.Text, nullable=False),
        sa.Column("entries", sa.Integer, nullable=False),
        sa.Column("period_days", sa.Integer, nullable=False),
        sa.Column("period_starts_at", sa.DateTime(timezone=True)),
        sa.Column("period_ends_at", sa.DateTime(timezone=True)),
        now_column("created_at"),
        now_column("updated_at"),
    )
    # The last guard behind the organisation lock: one open initial subscription order.
    sa.Index(
        "orders_one_open_subscription",
        table.c.org_id,
        unique=True,
        postgresql_where=sa.text("kind = 'subscription' AND state = 'pending'"),
    )
    return table


def _payments(metadata: sa.MetaData) -> sa.Table:
    return sa.Table(
        "payments",
        metadata,
        sa.Column("payment_id", UUID(as_uuid=True), primary_key=True),
        sa.Column("org_id", sa.Text, nullable=False),
        sa.Column("booking_id", sa.Text, unique=True),
        sa.Column("order_id", UUID(as_uuid=True), unique=True),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("amount", sa.BigInteger, nullable=False),
        sa.Column("currency", sa.Text, nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False, server_default="1"),
        sa.Column("provider_payment_id", sa.Text, unique=True),
        sa.Column("checkout_url", sa.Text),
        sa.Column("hold_expires_at", sa.DateTime(timezone=True)),
        sa.Column("reconciled_at", sa.DateTime(timezone=True)),
        # The contact snapshot: no address (no mail) and cs for payments made before it.
        sa.Column("contact_email", sa.Text, nullable=False, server_default=""),
        sa.Column("contact_locale", sa.Text, nullable=False, server_default="cs"),
        # The trace context of the request that made the payment (W3C headers): a later
        # change that another request brings about continues it (servicekit.tracing).
        sa.Column("trace", JSONB, nullable=False, server_default="{}"),
        now_column("created_at"),
        now_column("updated_at"),
        sa.CheckConstraint("(booking_id IS NULL) <> (order_id IS NULL)", name="payments_one_owner"),
        sa.CheckConstraint(
            "state IN ('pending','paid','failed','expired','cancelled',"
            "'refund_pending','refunded','refund_failed')",
            name="payments_state",
        ),
    )


def build_tables() -> Tables:
    metadata = sa.MetaData()
    return Tables(
        metadata=metadata,
        plans=_plans(metadata),
        orders=_orders(metadata),
        payments=_payments(metadata),
        eventing=add_eventing_tables(metadata),
    )


def schema_metadata() -> sa.MetaData:
    """What the migrations must reproduce (servicekit.migrations)."""
    return build_tables().metadata
