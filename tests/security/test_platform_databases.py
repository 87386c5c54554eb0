"""The platform the saga tests run on keeps the database boundary `make up` keeps: each part
connects as a role of its own that reaches only its own database, and the migrations ran
as that database's owner, not as the administrator.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from tests.support.platform import Platform

PARTS = ("booking", "payment", "access", "notify", "gateway")


def _libpq(url: str) -> str:
    return url.replace("+psycopg", "", 1)


def _at(url: str, database_url: str) -> str:
    """`url`'s role on the database of `database_url`."""
    return urlunsplit(urlsplit(url)._replace(path=urlsplit(database_url).path))


@pytest.mark.parametrize("other", ["booking", "gateway"])
async def test_payments_role_on_the_platform_cannot_reach_another_parts_database(
    platform: Platform, other: str
) -> None:
    payment = _libpq(platform.env["PAYMENT_DATABASE_URL"])
    target = _at(payment, _libpq(platform.env[f"{other.upper()}_DATABASE_URL"]))
    with pytest.raises(psycopg.OperationalError, match="permission denied for database"):
        await psycopg.AsyncConnection.connect(target)


async def test_each_part_runs_and_migrates_as_its_own_roles(platform: Platform) -> None:
    seen = {}
    for part in PARTS:
        upper = part.upper()
        runtime = _libpq(platform.env[f"{upper}_DATABASE_URL"])
        async with await psycopg.AsyncConnection.connect(runtime) as connection:
            row = await (
                await connection.execute(
                    "SELECT current_user, pg_get_userbyid(d.datdba), r.rolsuper"
                    " FROM pg_database d, pg_roles r"
                    " WHERE d.datname = current_database() AND r.rolname = current_user"
                )
            ).fetchone()
        seen[part] = row
    assert seen == {p: (f"liftfit_{p}", f"liftfit_{p}_owner", False) for p in PARTS}
