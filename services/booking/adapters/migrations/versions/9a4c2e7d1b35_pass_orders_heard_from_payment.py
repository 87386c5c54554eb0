"""pass orders heard from payment

Revision ID: 9a4c2e7d1b35
Revises: 3e8a51c0d7f2
Create Date: 2026-12-05 11:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "9a4c2e7d1b35"
down_revision: str | None = "3e8a51c0d7f2"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A pass credit is made only for an order whose payment was heard to succeed.
    op.create_table(
        "pass_orders",
        sa.Column("order_id", sa.Text(), nullable=False),
        sa.Column("payment_id", sa.Text(), nullable=True),
        sa.Column("paid_amount", sa.BigInteger(), nullable=True),
        sa.Column("paid_currency", sa.Text(), nullable=True),
        sa.Column("org_id", sa.Text(), nullable=True),
        sa.Column("entries", sa.Integer(), nullable=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.PrimaryKeyConstraint("order_id"),
    )


def downgrade() -> None:
    op.drop_table("pass_orders")
