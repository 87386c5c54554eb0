"""The booking database, as SQLAlchemy Core tables.

The rules that must hold whatever the code does live here as constraints: one live booking
per slot, no overlapping slots in a space, a pass balance that never goes negative, and a
ledger reference that applies once.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import UUID, ExcludeConstraint

from servicekit.schema import add_eventing_tables, now_column

ONE_LIVE_BOOKING_PER_SLOT = "bookings_one_live_per_slot"
LEDGER_REFERENCE_ONCE = "pass_ledger_reference_once"

metadata = MetaData()
eventing = add_eventing_tables(metadata)


spaces = Table(
    "spaces",
    metadata,
    Column("space_id", UUID(as_uuid=False), primary_key=True),
    Column("name", Text, nullable=False),
    Column("timezone", Text, nullable=False),
    now_column("created_at"),
)

slots = Table(
    "slots",
    metadata,
    Column("slot_id", UUID(as_uuid=False), primary_key=True),
    Column("space_id", UUID(as_uuid=False), ForeignKey("spaces.space_id"), nullable=False),
    Column("starts_at", DateTime(timezone=True), nullable=False),
    Column("ends_at", DateTime(timezone=True), nullable=False),
    Column("price_amount", BigInteger, nullable=False),
    Column("currency", Text, nullable=False),
    Column("state", Text, nullable=False),
    Column("holder_booking_id", UUID(as_uuid=False)),
    Column("closed_reason", Text),
    now_column("created_at"),
    now_column("updated_at"),
    CheckConstraint("starts_at < ends_at", name="slots_range_not_empty"),
    CheckConstraint("price_amount >= 0", name="slots_price_not_negative"),
    CheckConstraint("state IN ('available', 'held', 'booked', 'closed')", name="slots_state_known"),
    # A held or booked slot names its booking; a free or closed one names none.
    CheckConstraint(
        "(state IN ('held', 'booked')) = (holder_booking_id IS NOT NULL)",
        name="slots_holder_matches_state",
    ),
    ExcludeConstraint(
        ("space_id", "="),
        (text("tstzrange(starts_at, ends_at, '[)')"), "&&"),
        name="slots_do_not_overlap_in_a_space",
        using="gist",
    ),
)
Index("slots_by_space_and_start", slots.c.space_id, slots.c.starts_at)

bookings = Table(
    "bookings",
    metadata,
    Column("booking_id", UUID(as_uuid=False), primary_key=True),
    Column("org_id", Text, nullable=False),
    Column("user", Text, nullable=False),
    Column("slot_id", UUID(as_uuid=False), ForeignKey("slots.slot_id"), nullable=False),
    Column("space_id", UUID(as_uuid=False), nullable=False),
    Column("slot_starts_at", DateTime(timezone=True), nullable=False),
    Column("slot_ends_at", DateTime(timezone=True), nullable=False),
    Column("valid_from", DateTime(timezone=True), nullable=False),
    Column("valid_to", DateTime(timezone=True), nullable=False),
    Column("party_size", Integer, nullable=False),
    Column("payment_mode", Text, nullable=False),
    Column("price_amount", BigInteger, nullable=False),
    Column("currency", Text, nullable=False),
    Column("terms_version", Text, nullable=False),
    Column("state", Text, nullable=False),
    Column("payment_id", Text),
    Column("paid", Boolean, nullable=False, server_default=text("false")),
    Column("hold_expires_at", DateTime(timezone=True)),
    Column("trace_id", Text, nullable=False, server_default=""),
    Column("moves", Integer, nullable=False, server_default=text("0")),
    # The contact snapshot: no address (no mail) and cs for bookings made before it existed.
    Column("contact_email", Text, nullable=False, server_default=""),
    Column("contact_locale", Text, nullable=False, server_default="cs"),
    now_column("created_at"),
    now_column("updated_at"),
    CheckConstraint("party_size BETWEEN 1 AND 4", name="bookings_party_size_range"),
    CheckConstraint("payment_mode IN ('card', 'pass')", name="bookings_payment_mode_known"),
    CheckConstraint(
        "state IN ('pending', 'confirmed', 'cancelled', 'expired')", name="bookings_state_known"
    ),
)
# Invariant 1, enforced by the database: at most one pending or confirmed booking per slot.
Index(
    ONE_LIVE_BOOKING_PER_SLOT,
    bookings.c.slot_id,
    unique=True,
    postgresql_where=text("state IN ('pending', 'confirmed')"),
)
Index("bookings_by_org_newest_first", bookings.c.org_id, bookings.c.created_at.desc())

pass_balances = Table(
    "pass_balances",
    metadata,
    Column("org_id", Text, primary_key=True),
    Column("balance", Integer, nullable=False),
    now_column("updated_at"),
    CheckConstraint("balance >= 0", name="pass_balance_never_negative"),
)

pass_ledger = Table(
    "pass_ledger",
    metadata,
    Column("entry_id", BigInteger, Identity(), primary_key=True),
    Column("org_id", Text, nullable=False),
    Column("delta", Integer, nullable=False),
    Column("reason", Text, nullable=False),
    Column("reference", Text, nullable=False),
    Column("at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    UniqueConstraint("org_id", "reference", name=LEDGER_REFERENCE_ONCE),
)

# What the payment service told us of each pass order: its payment's success (payment_id,
# the amount paid) and PassOrderPaid (whose balance, how many entries). A credit needs both.
pass_orders = Table(
    "pass_orders",
    metadata,
    Column("order_id", Text, primary_key=True),
    Column("payment_id", Text),
    Column("paid_amount", BigInteger),
    Column("paid_currency", Text),
    Column("org_id", Text),
    Column("entries", Integer),
    now_column("created_at"),
    now_column("updated_at"),
)

# What the access service told us about PINs: disclosed, and later revoked at the provider.
pin_disclosures = Table(
    "pin_disclosures",
    metadata,
    Column("booking_id", UUID(as_uuid=False), nullable=False),
    Column("slot_id", UUID(as_uuid=False), nullable=False),
    Column("grant_id", Text, nullable=False),
    Column("disclosed_at", DateTime(timezone=True)),
    Column("revoked_at", DateTime(timezone=True)),
    PrimaryKeyConstraint("booking_id", "slot_id", "grant_id", name="pin_disclosures_pkey"),
)
Index("pin_disclosures_by_slot", pin_disclosures.c.slot_id)

# Money that arrived without a live booking to own it; each is announced for refund once.
unowned_payments = Table(
    "unowned_payments",
    metadata,
    Column("payment_id", Text, primary_key=True),
    Column("booking_id", Text, nullable=False),
    Column("reason", Text, nullable=False),
    now_column("created_at"),
)


def schema_metadata() -> MetaData:
    """What the migrations must reproduce (servicekit.migrations)."""
    return metadata
