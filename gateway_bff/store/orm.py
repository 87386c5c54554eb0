"""The gateway's database, as SQLAlchemy Core tables.

Everything here is the edge's own: who belongs to which organisation, with which role and
which contact, and who operates the platform. Bookings, payments and grants live in the
services; the gateway asks them.
"""

from __future__ import annotations

from sqlalchemy import (
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
)
from sqlalchemy.dialects.postgresql import UUID

from servicekit.schema import audit_log, now_column

metadata = MetaData()

orgs = Table(
    "orgs",
    metadata,
    Column("org_id", UUID(as_uuid=True), primary_key=True),
    Column("name", Text, nullable=False),
    now_column("created_at"),
)

members = Table(
    "members",
    metadata,
    Column("org_id", UUID(as_uuid=True), ForeignKey("orgs.org_id"), nullable=False),
    Column("user_name", Text, nullable=False),
    Column("role", Text, nullable=False),
    # The contact snapshot of the member's bookings and orders: no e-mail, no mail.
    Column("email", Text),
    Column("locale", Text, nullable=False, server_default="cs"),
    now_column("created_at"),
    PrimaryKeyConstraint("org_id", "user_name", name="members_pkey"),
    CheckConstraint("role IN ('owner', 'member')", name="members_role_known"),
    CheckConstraint("locale IN ('cs', 'en')", name="members_locale_known"),
)
# Every signed-in request asks for the user's memberships (GET /v1/me, the org chooser), in
# this order; the primary key leads with the organisation and cannot answer it.
Index("members_of_a_user", members.c.user_name, members.c.created_at, members.c.org_id)

operators = Table(
    "operators",
    metadata,
    Column("user_name", Text, primary_key=True),
    now_column("created_at"),
)

audit = audit_log(metadata)


def schema_metadata() -> MetaData:
    return metadata
