"""studios and their time zones

Revision ID: f0c6d177abbe
Revises: 6536b3ed5e3a
Create Date: 2026-12-01 00:05:33.211855
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "f0c6d177abbe"
down_revision: str | None = "6536b3ed5e3a"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Booking announces its studios (SpaceCreated): mails tell times in the studio's zone.
    op.create_table(
        "studios",
        sa.Column("space_id", sa.UUID(as_uuid=False), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("timezone", sa.Text(), nullable=False),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("space_id"),
    )


def downgrade() -> None:
    op.drop_table("studios")
