"""PostgreSQL confines each service to its own rows, attacked with the services' own roles
on the databases `deploy/local/infra.sh up` makes (the roles and passwords of
deploy/local/platform.env): another service's database refuses the connection; no runtime
role creates, alters or drops a table; the audit log takes new rows and keeps old ones; no
role the platform uses is a superuser.

The databases are brought to their head revisions first, as `make up` does, with the
migrations' grants; every write here is rolled back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from psycopg import errors

from servicekit import migrations
from tests.support.infrastructure import Infrastructure

REPO = Path(__file__).resolve().parents[2]
SERVICES = ("booking", "payment", "access", "notify", "gateway")


def _setting(name: str) -> str:
    for line in (REPO / "deploy/local/platform.env").read_text().splitlines():
        if line.startswith(f"{name}="):
            return line.split("=", 1)[1]
    raise AssertionError(f"{name} is not in deploy/local/platform.env")


def _url(infra: Infrastructure, setting: str, database: str | None = None) -> str:
    """A platform.env URL at this run's PostgreSQL (its port may differ)."""
    given = urlsplit(_setting(setting).replace("+psycopg", ""))
    here = urlsplit(infra.pg_admin_dsn)
    path = f"/{database}" if database else given.path
    return f"postgresql://{given.username}:{given.password}@{here.hostname}:{here.port}{path}"


def _runtime(infra: Infrastructure, service: str, database: str | None = None) -> str:
    return _url(infra, f"{service.upper()}_DATABASE_URL", database)


@pytest.fixture(scope="module")
def migrated(infra: Infrastructure) -> None:
    for service in SERVICES:
        owner = _url(infra, f"{service.upper()}_MIGRATION_DATABASE_URL")
        runtime_role = urlsplit(_runtime(infra, service)).username
        migrations.upgrade(service, owner.replace("://", "+psycopg://", 1), runtime_role)


@pytest.fixture
async def as_booking(infra: Infrastructure, migrated: None) -> AsyncIterator[Any]:
    async with await psycopg.AsyncConnection.connect(_runtime(infra, "booking")) as connection:
        yield connection
        await connection.rollback()


@pytest.mark.parametrize("other", ["booking", "gateway", "access"])
async def test_payments_role_cannot_connect_to_another_services_database(
    infra: Infrastructure, migrated: None, other: str
) -> None:
    with pytest.raises(psycopg.OperationalError, match="permission denied for database"):
        await psycopg.AsyncConnection.connect(_runtime(infra, "payment", other))


async def test_a_service_connects_to_its_own_database(
    infra: Infrastructure, migrated: None
) -> None:
    for service in SERVICES:
        async with await psycopg.AsyncConnection.connect(_runtime(infra, service)) as connection:
            await connection.execute("SELECT count(*) FROM audit_log")


@pytest.mark.parametrize(
    "statement",
    [
        "CREATE TABLE stolen (x int)",
        "ALTER TABLE audit_log ADD COLUMN x int",
        "DROP TABLE audit_log",
        "TRUNCATE audit_log",
    ],
)
async def test_a_runtime_role_cannot_change_its_schema(as_booking: Any, statement: str) -> None:
    with pytest.raises(errors.InsufficientPrivilege):
        await as_booking.execute(statement)


async def test_the_audit_log_takes_rows_and_keeps_them(as_booking: Any) -> None:
    await as_booking.execute(
        "INSERT INTO audit_log (actor, action, subject, detail)"
        " VALUES ('intruder', 'tried', 'the audit log', '{}')"
    )
    async with as_booking.transaction(force_rollback=True):
        with pytest.raises(errors.InsufficientPrivilege):
            await as_booking.execute("UPDATE audit_log SET actor = 'nobody'")
    with pytest.raises(errors.InsufficientPrivilege):
        await as_booking.execute("DELETE FROM audit_log")


async def test_no_role_of_the_platform_is_a_superuser(infra: Infrastructure) -> None:
    urls = [_runtime(infra, service) for service in SERVICES]
    urls += [_url(infra, f"{service.upper()}_MIGRATION_DATABASE_URL") for service in SERVICES]
    roles = [str(urlsplit(url).username) for url in urls]
    async with await psycopg.AsyncConnection.connect(infra.pg_admin_dsn) as admin:
        rows = await (
            await admin.execute(
                "SELECT rolname, rolsuper, rolcreaterole, rolcreatedb FROM pg_roles"
                " WHERE rolname = ANY(%s)",
                (roles,),
            )
        ).fetchall()
    assert sorted(name for name, *_ in rows) == sorted(roles)
    assert [name for name, *powers in rows if any(powers)] == []


@pytest.mark.parametrize("role", ["liftfit_booking", "liftfit_payment_owner", "postgres"])
async def test_over_tcp_a_role_needs_its_password(infra: Infrastructure, role: str) -> None:
    """A neighbour who knows a role's name gets nothing without its password; the
    cluster's superuser, which has none, cannot log in over TCP at all."""
    here = urlsplit(infra.pg_admin_dsn)
    guess = f"postgresql://{role}:{role}-guessed@{here.hostname}:{here.port}/postgres"
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        await psycopg.AsyncConnection.connect(guess)
