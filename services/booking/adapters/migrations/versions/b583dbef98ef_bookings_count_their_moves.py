"""bookings count their moves

Revision ID: b583dbef98ef
Revises: 5dcdf7969045
Create Date: 2026-11-30 23:10:16.483239
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "b583dbef98ef"
down_revision: str | None = "5dcdf7969045"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Numbers BookingRescheduled, so access can tell a replayed older move from a newer one.
    op.add_column(
        "bookings", sa.Column("moves", sa.Integer(), server_default=sa.text("0"), nullable=False)
    )


def downgrade() -> None:
    op.drop_column("bookings", "moves")
