"""The notify database, as SQLAlchemy Core tables.

A delivery's key is its primary key, so a second copy of an event cannot make a second
delivery whatever the code does; its state is one of five, by constraint. No column holds
a PIN: the access mail's PIN is read from the access service at send time, never stored.
"""

from __future__ import annotations

from sqlalchemy import CheckConstraint, Column, DateTime, Index, Integer, MetaData, Table, Text
from sqlalchemy.dialects.postgresql import JSONB, UUID

from servicekit.schema import add_eventing_tables, now_column

metadata = MetaData()
eventing = add_eventing_tables(metadata)

deliveries = Table(
    "deliveries",
    metadata,
    # uuid5 of (source, template, recipient): also the mail's Message-ID.
    Column("delivery_key", UUID(as_uuid=False), primary_key=True),
    Column("source", Text, nullable=False),
    Column("template", Text, nullable=False),
    Column("recipient", Text, nullable=False),
    Column("locale", Text, nullable=False),
    Column("context", JSONB, nullable=False),
    Column("state", Text, nullable=False),
    Column("org_id", Text, nullable=False, server_default=""),
    Column("booking_id", UUID(as_uuid=False)),
    Column("order_id", UUID(as_uuid=False)),
    Column("tries", Integer, nullable=False, server_default="0"),
    Column("last_error", Text, nullable=False, server_default=""),
    now_column("created_at"),
    now_column("updated_at"),
    Column("sent_at", DateTime(timezone=True)),
    CheckConstraint(
        "state IN ('queued', 'sending', 'sent', 'failed', 'unknown')",
        name="deliveries_state_known",
    ),
)
# At most one access mail per grant, whoever it is addressed to.
Index(
    "deliveries_one_access_mail_per_grant",
    deliveries.c.source,
    unique=True,
    postgresql_where=deliveries.c.template == "access_details",
)
Index("deliveries_by_booking", deliveries.c.booking_id, deliveries.c.created_at)
Index("deliveries_by_order", deliveries.c.order_id, deliveries.c.created_at)
Index(
    "deliveries_undecided",
    deliveries.c.state,
    deliveries.c.updated_at,
    postgresql_where=deliveries.c.state.in_(["unknown", "failed"]),
)

# Who gets a booking's access mail, from its booking events; the access events name only
# the booking and the grant.
booking_contacts = Table(
    "booking_contacts",
    metadata,
    Column("booking_id", UUID(as_uuid=False), primary_key=True),
    Column("org_id", Text, nullable=False),
    Column("email", Text, nullable=False),
    Column("locale", Text, nullable=False),
    Column("space_id", Text, nullable=False),
    now_column("updated_at"),
)

# The studios as booking announced them (SpaceCreated): a mail tells a booking's times in
# its studio's time zone.
studios = Table(
    "studios",
    metadata,
    Column("space_id", UUID(as_uuid=False), primary_key=True),
    Column("name", Text, nullable=False),
    Column("timezone", Text, nullable=False),
    now_column("updated_at"),
)

# The grants whose credential exists (AccessActivated): each gets one access mail.
active_grants = Table(
    "active_grants",
    metadata,
    Column("grant_id", Text, primary_key=True),
    Column("booking_id", UUID(as_uuid=False), nullable=False),
    now_column("activated_at"),
)
Index("active_grants_by_booking", active_grants.c.booking_id)


def schema_metadata() -> MetaData:
    """What the migrations must reproduce (servicekit.migrations)."""
    return metadata
