"""The access database, as SQLAlchemy Core tables.

The rules that must hold whatever the code does live here as constraints: one live grant
per booking, one provision per provider code, and the PIN in a table of its own, apart
from the provider's identifier of the code, encrypted, and deleted when the grant ends.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import UUID

from servicekit.schema import add_eventing_tables, now_column

ONE_LIVE_GRANT_PER_BOOKING = "grants_one_live_per_booking"

metadata = MetaData()
eventing = add_eventing_tables(metadata)

grants = Table(
    "grants",
    metadata,
    Column("grant_id", UUID(as_uuid=False), primary_key=True),
    Column("booking_id", UUID(as_uuid=False), nullable=False),
    Column("org_id", Text, nullable=False),
    Column("user", Text, nullable=False),
    Column("slot_id", UUID(as_uuid=False), nullable=False),
    Column("device_id", Text, nullable=False),
    # The booking's window when it was confirmed or moved: a snapshot, never re-read.
    Column("valid_from", DateTime(timezone=True), nullable=False),
    Column("valid_to", DateTime(timezone=True), nullable=False),
    Column("state", Text, nullable=False),
    Column("provision_id", UUID(as_uuid=False), nullable=False),
    # Which of the booking's moves the grant serves: an older move arriving late is stale.
    Column("booking_move", Integer, nullable=False, server_default=text("0")),
    Column("failure", Text),
    now_column("created_at"),
    now_column("updated_at"),
    CheckConstraint("valid_from < valid_to", name="grants_window_not_empty"),
    CheckConstraint(
        "state IN ('planned', 'active', 'revoke_pending', 'revoked', 'failed')",
        name="grants_state_known",
    ),
)
# A booking has at most one grant that may open the door or is about to.
Index(
    ONE_LIVE_GRANT_PER_BOOKING,
    grants.c.booking_id,
    unique=True,
    postgresql_where=text("state IN ('planned', 'active')"),
)
Index("grants_by_booking", grants.c.booking_id, grants.c.created_at)
Index("grants_by_state", grants.c.state, grants.c.updated_at)

provisions = Table(
    "provisions",
    metadata,
    Column("provision_id", UUID(as_uuid=False), primary_key=True),
    Column("grant_id", UUID(as_uuid=False), ForeignKey("grants.grant_id"), nullable=False),
    Column("device_id", Text, nullable=False),
    Column("state", Text, nullable=False),
    # The provider's id of the code: never beside the PIN.
    Column("provider_code_id", Text, unique=True),
    now_column("created_at"),
    now_column("updated_at"),
    CheckConstraint(
        "state IN ('pending', 'creating', 'created', 'removing', 'removed', 'abandoned',"
        " 'duplicated', 'failed')",
        name="provisions_state_known",
    ),
)
Index("provisions_by_grant", provisions.c.grant_id)

# The PIN of a created code, encrypted with AES-GCM under a key id (adapters/pin_vault.py),
# bound to its provision; the row is deleted when the grant stops being active.
credentials = Table(
    "credentials",
    metadata,
    Column(
        "provision_id",
        UUID(as_uuid=False),
        ForeignKey("provisions.provision_id"),
        primary_key=True,
    ),
    Column("key_id", Text, nullable=False),
    Column("nonce", LargeBinary, nullable=False),
    Column("ciphertext", LargeBinary, nullable=False),
    now_column("created_at"),
)
Index("credentials_by_key", credentials.c.key_id)

# Every read of a PIN: who read it, for what, when.
disclosures = Table(
    "disclosures",
    metadata,
    Column("disclosure_id", BigInteger, Identity(), primary_key=True),
    Column("grant_id", UUID(as_uuid=False), ForeignKey("grants.grant_id"), nullable=False),
    Column("booking_id", UUID(as_uuid=False), nullable=False),
    Column("reader", Text, nullable=False),
    Column("purpose", Text, nullable=False),
    now_column("at"),
)
Index("disclosures_by_grant", disclosures.c.grant_id)

# Bookings that were cancelled, so a confirmation that arrives after it plans nothing.
ended_bookings = Table(
    "ended_bookings",
    metadata,
    Column("booking_id", UUID(as_uuid=False), primary_key=True),
    now_column("ended_at"),
)

# What the drift check found: each says what is wrong, who owns the truth, the repair.
drift_findings = Table(
    "drift_findings",
    metadata,
    Column("finding_id", UUID(as_uuid=False), primary_key=True),
    Column("kind", Text, nullable=False),
    Column("subject_id", Text, nullable=False),
    Column("problem", Text, nullable=False),
    Column("truth", Text, nullable=False),
    Column("repair", Text, nullable=False),
    Column("state", Text, nullable=False),
    now_column("found_at"),
    now_column("seen_at"),
    Column("cleared_at", DateTime(timezone=True)),
    CheckConstraint("state IN ('repaired', 'open', 'cleared')", name="drift_findings_state"),
)
# One finding per problem until it is gone: a repeated sighting updates it.
Index(
    "drift_findings_one_standing",
    drift_findings.c.kind,
    drift_findings.c.subject_id,
    unique=True,
    postgresql_where=text("state <> 'cleared'"),
)


def schema_metadata() -> MetaData:
    """What the migrations must reproduce (servicekit.migrations)."""
    return metadata
