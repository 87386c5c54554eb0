"""An index of members by user, for the memberships every signed-in request asks for

Revision ID: 4c2e9a7d1f30
Revises: b1111f46a8e7
Create Date: 2026-12-01 20:20:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "4c2e9a7d1f30"
down_revision: str | None = "b1111f46a8e7"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "members_of_a_user", "members", ["user_name", "created_at", "org_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("members_of_a_user", table_name="members")
