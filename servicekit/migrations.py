"""Schemas by migration: each service's tables come from its own Alembic revisions.

A service never creates or alters a table: it runs as a role that may read and write rows
and nothing more, and its schema is brought to the head revision beforehand, by
`python -m servicekit.migrate upgrade <service>` (run by `make up`, by the test fixtures and
by a Kubernetes Job), connected as the database's owner. After the upgrade the runtime
role is granted what it needs on every table, so a new table needs no extra step.

Each service keeps its revisions in `services/<service>/adapters/migrations/`, whose
`env.py` only names the service's metadata; the mechanics live here once. The gateway,
which is no bounded context, keeps its own tables (organisations, members, operators) the
same way in `gateway_bff/store/`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module

from alembic import command, context, op
from alembic.config import Config
from sqlalchemy import MetaData, create_engine, pool, text

from servicekit.schema import PENDING_BY_AGGREGATE, announce_commits, stop_announcing_commits

# One migrator at a time per database: two processes upgrading at once would collide.
_MIGRATION_LOCK = 424242
_ROLE = re.compile(r"[a-z_][a-z0-9_]{0,62}")


@dataclass(frozen=True)
class ServiceSchema:
    """Where a service's revisions live and which metadata they must reproduce."""

    name: str
    metadata: Callable[[], MetaData]
    package: str

    @property
    def script_location(self) -> str:
        return f"{self.package}:migrations"


def schema_of(service: str) -> ServiceSchema:
    package = "gateway_bff.store" if service == "gateway" else f"services.{service}.adapters"
    orm = import_module(f"{package}.orm")
    return ServiceSchema(service, orm.schema_metadata, package)


def alembic_config(schema: ServiceSchema, url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", schema.script_location)
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    config.attributes["metadata"] = schema.metadata()
    return config


def upgrade(service: str, url: str, runtime_role: str | None = None) -> None:
    """Brings the database to the head revision, then lets the runtime role use it."""
    command.upgrade(alembic_config(schema_of(service), url), "head")
    if runtime_role:
        grant_runtime_role(url, runtime_role)


def check(service: str, url: str) -> None:
    """Raises when the models and the migrated database differ."""
    command.check(alembic_config(schema_of(service), url))


def revision(service: str, url: str, message: str) -> None:
    """Writes a new revision from the difference between the models and the database."""
    command.revision(alembic_config(schema_of(service), url), message, autogenerate=True)


def grant_runtime_role(url: str, role: str) -> None:
    """Rows, not tables: the runtime role may read and write but not create or drop, and
    may only add to the audit log."""
    if not _ROLE.fullmatch(role):
        raise ValueError(f"not a role name: {role!r}")
    engine = create_engine(_sync_url(url), poolclass=pool.NullPool)
    try:
        with engine.begin() as connection:
            for statement in (
                f"GRANT USAGE ON SCHEMA public TO {role}",
                f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
                f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}",
                # PUBLIC may call functions by default; a database set up without that
                # default must still let the service call its own (card_checkout).
                f"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO {role}",
                # The audit log is append-only for the service: what an operator decided
                # stays as it was written.
                f"REVOKE UPDATE, DELETE, TRUNCATE ON TABLE audit_log FROM {role}",
            ):
                connection.execute(text(statement))
    finally:
        engine.dispose()


def announce_outbox_commits() -> None:
    """A revision's upgrade: the outbox tells its relay of committed rows
    (servicekit.schema.announce_commits); the same in every service."""
    for statement in announce_commits("outbox"):
        op.execute(statement)


def stop_announcing_outbox_commits() -> None:
    """The downgrade of announce_outbox_commits."""
    for statement in stop_announcing_commits("outbox"):
        op.execute(statement)


def index_pending_timers_by_aggregate() -> None:
    """A revision's upgrade: the timers' pending ones found by kind and aggregate
    (servicekit.schema); the same in every service."""
    op.create_index(
        PENDING_BY_AGGREGATE,
        "timers",
        ["kind", "aggregate_id"],
        postgresql_where=text("state = 'pending'"),
    )


def drop_pending_timers_by_aggregate() -> None:
    """The downgrade of index_pending_timers_by_aggregate."""
    op.drop_index(PENDING_BY_AGGREGATE, table_name="timers")


def run_environment() -> None:
    """The body of every service's migrations/env.py (online mode only)."""
    config = context.config
    metadata: MetaData = config.attributes["metadata"]
    url = config.get_main_option("sqlalchemy.url")
    assert url, "the migration needs a database URL"
    engine = create_engine(_sync_url(url), poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            connection.execute(text(f"SELECT pg_advisory_lock({_MIGRATION_LOCK})"))
            try:
                context.configure(
                    connection=connection, target_metadata=metadata, compare_server_default=True
                )
                with context.begin_transaction():
                    context.run_migrations()
            finally:
                connection.execute(text(f"SELECT pg_advisory_unlock({_MIGRATION_LOCK})"))
                connection.commit()
    finally:
        engine.dispose()


def _sync_url(url: str) -> str:
    # The services' URLs name the async-capable psycopg driver; the same driver runs sync.
    return url.replace("postgresql://", "postgresql+psycopg://", 1)
