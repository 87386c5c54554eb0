"""The gateway's schema: organisations, members, operators and the audit log

Revision ID: b1111f46a8e7
Revises:
Create Date: 2026-12-01 01:45:46.334537
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "b1111f46a8e7"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "audit_log",
        sa.Column("audit_id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column(
            "at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.Column("actor", sa.Text(), nullable=False),
        sa.Column("action", sa.Text(), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("detail", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.PrimaryKeyConstraint("audit_id"),
    )
    op.create_table(
        "operators",
        sa.Column("user_name", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("user_name"),
    )
    op.create_table(
        "orgs",
        sa.Column("org_id", sa.UUID(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("org_id"),
    )
    op.create_table(
        "members",
        sa.Column("org_id", sa.UUID(), nullable=False),
        sa.Column("user_name", sa.Text(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("email", sa.Text(), nullable=True),
        sa.Column("locale", sa.Text(), server_default="cs", nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("locale IN ('cs', 'en')", name="members_locale_known"),
        sa.CheckConstraint("role IN ('owner', 'member')", name="members_role_known"),
        sa.ForeignKeyConstraint(
            ["org_id"],
            ["orgs.org_id"],
        ),
        sa.PrimaryKeyConstraint("org_id", "user_name", name="members_pkey"),
    )


def downgrade() -> None:
    op.drop_table("members")
    op.drop_table("orgs")
    op.drop_table("operators")
    op.drop_table("audit_log")
