"""payments keep the trace they were made in

Revision ID: 56dc7349da3a
Revises: 79b936faaf76
Create Date: 2026-12-01 02:07:34.759142
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "56dc7349da3a"
down_revision: str | None = "79b936faaf76"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "payments",
        sa.Column(
            "trace", postgresql.JSONB(astext_type=sa.Text()), server_default="{}", nullable=False
        ),
    )


def downgrade() -> None:
    op.drop_column("payments", "trace")
