"""the card checkout's helpers planned once per connection

Revision ID: 3e8a51c0d7f2
Revises: 7c1f2e9a4b60
Create Date: 2026-12-02 05:40:00

The helpers `card_checkout` calls were SQL functions that PostgreSQL could not inline:
STRICT with a body that is not (slot_refusal's CASE), or an argument used twice whose
value is itself a call (protobuf_field's content). A SQL function that is not inlined is
parsed, analysed and planned again in every transaction that calls it (perf: 16 % of the
database's CPU in `make bench-booking`'s checkout phase; pgbench with one client, a
statement a transaction: 100-115 µs for the event's envelope, 40 µs for slot_refusal).

Same rules, same bytes: slot_refusal loses STRICT, so the planner inlines it where it is
planned (once per connection in card_checkout, in the query of
SlotRepository.require_sellable); its arguments are never NULL (the columns are NOT NULL
and the time is the caller's), and a NULL would still answer NULL, as before. The
protobuf helpers become PL/pgSQL, compiled once per connection (30-40 µs for the
envelope).
"""

from collections.abc import Sequence

from alembic import op

revision: str = "3e8a51c0d7f2"
down_revision: str | None = "7c1f2e9a4b60"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SLOT_REFUSAL = r"""
-- Why a slot cannot be sold at `at`, or NULL when it can: a slot is sold only before it
-- begins, and only while it is available (not held, booked or closed). Not STRICT, so
-- the planner inlines it (a NULL argument still gives NULL).
CREATE OR REPLACE FUNCTION slot_refusal(state text, starts_at timestamptz, at timestamptz)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN at >= starts_at THEN 'has already started'
    WHEN state <> 'available' THEN 'is ' || state
  END
$$;
"""

PROTOBUF = r"""
-- A length-delimited field (a message, a string): its key, its length, its bytes.
CREATE OR REPLACE FUNCTION protobuf_field(field_key bytea, content bytea) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
  RETURN field_key || protobuf_varint(length(content)) || content;
END $$;

-- A Money message (amount, currency) given its fields' keys.
CREATE OR REPLACE FUNCTION protobuf_money(keys bytea[], amount bigint, currency text)
RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
  RETURN keys[1] || protobuf_varint(amount)
    || protobuf_field(keys[2], convert_to(currency, 'UTF8'));
END $$;

-- An EventEnvelope whose event lacked one field, with that field added. `parts`, as
-- servicekit.envelope.unfinished gives them: the envelope without its payload, the
-- payload's key, the Any without its value, the value's key, the event without the
-- field, the field's key.
CREATE OR REPLACE FUNCTION finished_envelope(parts bytea[], field bytea) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
  RETURN parts[1] || protobuf_field(parts[2],
    parts[3] || protobuf_field(parts[4], parts[5] || protobuf_field(parts[6], field)));
END $$;
"""

# The previous revision's definitions, restored on the way down.
SQL_HELPERS = r"""
CREATE OR REPLACE FUNCTION slot_refusal(state text, starts_at timestamptz, at timestamptz)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT CASE
    WHEN at >= starts_at THEN 'has already started'
    WHEN state <> 'available' THEN 'is ' || state
  END
$$;
CREATE OR REPLACE FUNCTION protobuf_field(field_key bytea, content bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT field_key || protobuf_varint(length(content)) || content
$$;
CREATE OR REPLACE FUNCTION protobuf_money(keys bytea[], amount bigint, currency text)
RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT keys[1] || protobuf_varint(amount) || protobuf_field(keys[2], convert_to(currency, 'UTF8'))
$$;
CREATE OR REPLACE FUNCTION finished_envelope(parts bytea[], field bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT parts[1] || protobuf_field(parts[2],
    parts[3] || protobuf_field(parts[4], parts[5] || protobuf_field(parts[6], field)))
$$;
"""


def upgrade() -> None:
    op.execute(SLOT_REFUSAL)
    op.execute(PROTOBUF)


def downgrade() -> None:
    op.execute(SQL_HELPERS)
