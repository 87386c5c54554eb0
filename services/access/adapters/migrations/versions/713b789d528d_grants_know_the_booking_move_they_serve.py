"""grants know the booking move they serve

Revision ID: 713b789d528d
Revises: d491ed6f9c91
Create Date: 2026-11-30 23:10:34.126446
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "713b789d528d"
down_revision: str | None = "d491ed6f9c91"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A move replayed after a newer one is recognised as stale by this number.
    op.add_column(
        "grants",
        sa.Column("booking_move", sa.Integer(), server_default=sa.text("0"), nullable=False),
    )


def downgrade() -> None:
    op.drop_column("grants", "booking_move")
