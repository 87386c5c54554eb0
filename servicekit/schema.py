"""The tables of the mechanics every service repeats, added to each service's own metadata.

Every service owns its database, so every service has its own outbox, inbox, timers,
audit log, incidents and idempotency keys, with the same shape everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import (
    DDL,
    BigInteger,
    Column,
    DateTime,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    event,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID

PENDING = "pending"
DISPATCHED = "dispatched"
FAILED = "failed"
PROCESSED = "processed"
FIRED = "fired"
CANCELLED = "cancelled"
PENDING_BY_AGGREGATE = "timers_pending_by_aggregate"


OPEN = "open"
RESOLVED = "resolved"


@dataclass(frozen=True)
class EventingTables:
    outbox: Table
    inbox: Table
    timers: Table
    audit_log: Table
    incidents: Table
    idempotency_keys: Table


def add_eventing_tables(metadata: MetaData) -> EventingTables:
    return EventingTables(
        outbox=_outbox(metadata),
        inbox=_inbox(metadata),
        timers=_timers(metadata),
        audit_log=_audit_log(metadata),
        incidents=_incidents(metadata),
        idempotency_keys=_idempotency_keys(metadata),
    )


def now_column(name: str) -> Column[object]:
    """A timestamp column that the database fills with the time of the insert."""
    return Column(name, DateTime(timezone=True), nullable=False, server_default=func.now())


def _outbox(metadata: MetaData) -> Table:
    table = Table(
        "outbox",
        metadata,
        Column("effect_id", UUID(as_uuid=True), primary_key=True),
        # Claim order only; a row that commits late keeps its smaller seq and is still
        # claimed because the relay never keeps a high-water mark.
        Column("seq", BigInteger, Identity(), nullable=False, unique=True),
        Column("topic", Text, nullable=False),
        Column("key", Text, nullable=False),
        Column("event_type", Text, nullable=False),
        Column("payload", LargeBinary, nullable=False),
        Column("headers", JSONB, nullable=False),
        Column("state", Text, nullable=False, server_default=PENDING),
        Column("attempts", Integer, nullable=False, server_default="0"),
        Column(
            "next_attempt_at", DateTime(timezone=True), nullable=False, server_default=func.now()
        ),
        Column("dispatch_generation", Integer, nullable=False, server_default="0"),
        Column("last_error", Text),
        now_column("created_at"),
        Column("dispatched_at", DateTime(timezone=True)),
    )
    # The relay walks pending rows in seq order; an index in that order lets it stop after
    # one batch instead of sorting every pending row.
    Index("outbox_pending_seq", table.c.seq, postgresql_where=text("state = 'pending'"))
    # Tables made from the models (the mechanics tests, the benchmarks) announce their
    # commits as the migrated ones do.
    for statement in announce_commits(table.name):
        event.listen(table, "after_create", DDL(statement))  # type: ignore[no-untyped-call]
    return table


def outbox_channel(table: str) -> str:
    """The NOTIFY channel on which an outbox announces committed rows: the table's name."""
    return table


def announce_commits(table: str) -> list[str]:
    """The trigger by which an outbox tells its relay that rows were committed.

    Once per INSERT statement, however many rows it wrote; PostgreSQL delivers the
    notification at commit, never for a rollback, and folds the identical ones of one
    transaction into one. The relay (servicekit.relay) listens, and polls only as a fallback.
    """
    return [
        "CREATE OR REPLACE FUNCTION outbox_announce_commit() RETURNS trigger"
        " LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify(TG_TABLE_NAME, ''); RETURN NULL; END $$",
        f'CREATE TRIGGER "{table}_announce_commit" AFTER INSERT ON "{table}"'
        " FOR EACH STATEMENT EXECUTE FUNCTION outbox_announce_commit()",
    ]


def stop_announcing_commits(table: str) -> list[str]:
    """Undoes announce_commits (a migration's downgrade)."""
    return [
        f'DROP TRIGGER IF EXISTS "{table}_announce_commit" ON "{table}"',
        "DROP FUNCTION IF EXISTS outbox_announce_commit()",
    ]


def _inbox(metadata: MetaData) -> Table:
    return Table(
        "inbox",
        metadata,
        Column("consumer", Text, nullable=False),
        Column("event_id", Text, nullable=False),
        Column("event_type", Text, nullable=False),
        Column("state", Text, nullable=False),
        Column("dispatch_generation", Integer, nullable=False, server_default="0"),
        Column("attempts", Integer, nullable=False, server_default="0"),
        Column("last_error", Text),
        Column("topic", Text, nullable=False),
        Column("partition", Integer, nullable=False),
        Column("offset", BigInteger, nullable=False),
        # Kept for a parked message, so an operator can see what failed.
        Column("payload", LargeBinary),
        now_column("created_at"),
        Column("processed_at", DateTime(timezone=True)),
        PrimaryKeyConstraint("consumer", "event_id", name="inbox_pkey"),
    )


def _timers(metadata: MetaData) -> Table:
    table = Table(
        "timers",
        metadata,
        Column("timer_id", UUID(as_uuid=True), primary_key=True),
        Column("kind", Text, nullable=False),
        Column("aggregate_id", Text, nullable=False),
        Column("due_at", DateTime(timezone=True), nullable=False),
        # The state the job expects to find when it fires; a handler does nothing if it changed.
        Column("expected", JSONB, nullable=False),
        Column("state", Text, nullable=False, server_default=PENDING),
        Column("attempts", Integer, nullable=False, server_default="0"),
        Column("last_error", Text),
        Column("headers", JSONB, nullable=False),
        # A runner's claim: the timer is its own until leased_until, then anyone's again.
        Column("lease_token", UUID(as_uuid=True)),
        Column("leased_until", DateTime(timezone=True)),
        now_column("created_at"),
        Column("fired_at", DateTime(timezone=True)),
    )
    Index("timers_pending_due", table.c.due_at, postgresql_where=text("state = 'pending'"))
    # A handler asks whether an aggregate has a pending timer of a kind, or cancels it, on
    # its way (Timers.has_pending, cancel): without this each read every pending timer (access
    # keeps one for every grant still ahead).
    Index(
        PENDING_BY_AGGREGATE,
        table.c.kind,
        table.c.aggregate_id,
        postgresql_where=text("state = 'pending'"),
    )
    return table


def _audit_log(metadata: MetaData) -> Table:
    return Table(
        "audit_log",
        metadata,
        Column("audit_id", BigInteger, Identity(), primary_key=True),
        Column("at", DateTime(timezone=True), nullable=False, server_default=func.now()),
        Column("actor", Text, nullable=False),
        Column("action", Text, nullable=False),
        Column("subject", Text, nullable=False),
        Column("detail", JSONB, nullable=False),
    )


def _incidents(metadata: MetaData) -> Table:
    """What needs a human: opened by code, resolved by an operator's decision."""
    table = Table(
        "incidents",
        metadata,
        Column("incident_id", UUID(as_uuid=True), primary_key=True),
        Column("kind", Text, nullable=False),
        Column("subject_id", Text, nullable=False),
        Column("state", Text, nullable=False, server_default=OPEN),
        Column("detail", Text, nullable=False),
        now_column("opened_at"),
        Column("resolved_at", DateTime(timezone=True)),
        Column("resolved_by", Text),
        Column("decision", Text),
        Column("note", Text),
    )
    # A repeated observation of the same problem adds no second open incident.
    Index(
        "incidents_one_open",
        table.c.kind,
        table.c.subject_id,
        unique=True,
        postgresql_where=text("state = 'open'"),
    )
    return table


def _idempotency_keys(metadata: MetaData) -> Table:
    """One row per Idempotency-Key per organisation and operation (servicekit.idempotency)."""
    return Table(
        "idempotency_keys",
        metadata,
        Column("org_id", Text, nullable=False),
        Column("operation", Text, nullable=False),
        # HMAC of organisation, operation and key: the key itself is never stored.
        Column("key_hash", LargeBinary, nullable=False),
        Column("fingerprint", LargeBinary, nullable=False),
        Column("resource_id", Text, nullable=False),
        now_column("created_at"),
        PrimaryKeyConstraint("org_id", "operation", "key_hash", name="idempotency_keys_pkey"),
    )


def audit_log(metadata: MetaData) -> Table:
    """The audit log alone, for a process that keeps one without the eventing tables."""
    return _audit_log(metadata)
