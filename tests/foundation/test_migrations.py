"""Schemas come from each service's migrations, and the services run without CREATE rights."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import psycopg
import pytest
from alembic.util.exc import CommandError

from servicekit import migrate, migrations
from tests.support.infrastructure import Infrastructure, create_database, drop_database

SERVICES = ["booking", "payment", "access", "notify"]
SCHEMAS = [*SERVICES, "gateway"]  # the gateway has a database too, without an outbox


@pytest.mark.parametrize("service", SCHEMAS)
def test_the_migrations_of_an_empty_database_give_exactly_the_models_schema(
    infra: Infrastructure, service: str
) -> None:
    name = f"migrate_{service}_{uuid.uuid4().hex[:8]}"
    url = create_database(infra.pg_admin_dsn, name)
    try:
        with pytest.raises(CommandError):  # an empty database is not the models' schema
            migrations.check(service, url)
        migrations.upgrade(service, url)
        migrations.check(service, url)  # raises when anything differs
        migrations.upgrade(service, url)  # running it again changes nothing
    finally:
        drop_database(infra.pg_admin_dsn, name)


@pytest.mark.parametrize("service", SERVICES)
def test_the_runtime_role_reads_and_writes_rows_but_cannot_create_or_drop_tables(
    service_database: Callable[[str], str], service: str
) -> None:
    url = service_database(service).replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(
            "INSERT INTO audit_log (actor, action, subject, detail) VALUES ('t', 'a', 's', '{}')"
        )
        assert connection.execute("SELECT count(*) FROM audit_log").fetchone() == (1,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            connection.execute("CREATE TABLE intruder (id int)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            connection.execute("DROP TABLE audit_log")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            connection.execute("ALTER TABLE outbox ADD COLUMN intruder int")


def test_a_database_at_a_revision_the_code_does_not_know_is_refused_plainly(
    infra: Infrastructure, capsys: pytest.CaptureFixture[str]
) -> None:
    name = f"migrate_unknown_{uuid.uuid4().hex[:8]}"
    url = create_database(infra.pg_admin_dsn, name)
    try:
        migrations.upgrade("booking", url)
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute("UPDATE alembic_version SET version_num = '0123456789ab'")
        assert migrate.main(["upgrade", "booking", "--url", url]) == 3
        said = capsys.readouterr().err
        assert "booking: the database's schema revision is not one this code knows" in said
        assert "0123456789ab" in said
    finally:
        drop_database(infra.pg_admin_dsn, name)


@pytest.mark.parametrize("service", SERVICES)
def test_the_outbox_of_every_service_announces_its_commits_to_the_relay(
    service_database: Callable[[str], str], service: str
) -> None:
    url = service_database(service).replace("postgresql+psycopg://", "postgresql://", 1)
    with (
        psycopg.connect(url, autocommit=True) as listening,
        psycopg.connect(url, autocommit=True) as writing,
    ):
        listening.execute('LISTEN "outbox"')
        with writing.transaction():  # two rows, one commit: one notification
            for _ in range(2):
                writing.execute(
                    "INSERT INTO outbox (effect_id, topic, key, event_type, payload, headers)"
                    " VALUES (gen_random_uuid(), 't', 'k', 'e', '\\x00', '{}')"
                )
        heard = list(listening.notifies(timeout=5, stop_after=1))
    assert [n.channel for n in heard] == ["outbox"]
