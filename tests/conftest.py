"""Fixtures shared by every suite: real PostgreSQL and Kafka, isolated per test.

The core suite runs against real infrastructure and fails, never skips, when it cannot be
had. Each test gets its own databases and its own topic prefix, so tests never depend on
each other and can share one broker.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from servicekit import tracing
from tests.support.infrastructure import (
    Infrastructure,
    MigratedTemplates,
    create_database,
    drop_database,
    ensure_infrastructure,
)
from tests.support.platform import Platform, started_platform
from tests.support.topics import create_topics, delete_topics

_EXPORTER = InMemorySpanExporter()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests on the shared platform run last, one after another: the platform starts
    with the first of them and its ten idle processes (half a core of polling) then never
    load the suites before them, the fault tests among them, which time restarts."""
    items.sort(key=lambda item: "shared_platform" in getattr(item, "fixturenames", ()))


@pytest.fixture(scope="session")
def infra() -> Infrastructure:
    return ensure_infrastructure()


@pytest.fixture(scope="session")
def kafka_bootstrap(infra: Infrastructure) -> str:
    return infra.kafka_bootstrap


@pytest.fixture(scope="session")
def span_exporter() -> InMemorySpanExporter:
    """Every span of the test process, services included, lands here."""
    tracing.configure_tracing("liftfit-tests", exporter=_EXPORTER)
    return _EXPORTER


@pytest.fixture
def new_database(infra: Infrastructure) -> Iterator[Callable[[str], str]]:
    """Creates fresh databases; returns their SQLAlchemy URLs (postgresql+psycopg)."""
    created: list[str] = []

    def make(prefix: str) -> str:
        name = f"{prefix}_{uuid.uuid4().hex[:10]}"
        url = create_database(infra.pg_admin_dsn, name)
        created.append(name)
        return url.replace("postgresql://", "postgresql+psycopg://", 1)

    yield make
    for name in created:
        drop_database(infra.pg_admin_dsn, name)


@pytest.fixture(scope="session")
def migrated_templates(infra: Infrastructure) -> Iterator[MigratedTemplates]:
    templates = MigratedTemplates(infra.pg_admin_dsn)
    yield templates
    templates.drop_all()


@pytest.fixture
def service_database(
    infra: Infrastructure, migrated_templates: MigratedTemplates
) -> Iterator[Callable[[str], str]]:
    """A fresh database with a service's migrated schema; returns the URL of the runtime
    role the service runs as (rows only, no CREATE), as postgresql+psycopg."""
    created: list[str] = []

    def make(service: str) -> str:
        name = f"{service}_{uuid.uuid4().hex[:10]}"
        url = migrated_templates.database(service, name)
        created.append(name)
        return url.replace("postgresql://", "postgresql+psycopg://", 1)

    yield make
    for name in created:
        drop_database(infra.pg_admin_dsn, name)


@pytest.fixture
async def new_topics(
    kafka_bootstrap: str,
) -> AsyncIterator[Callable[[dict[str, int]], Awaitable[str]]]:
    """Creates topics under a fresh prefix; returns the prefix. They go with the test."""
    made: list[tuple[str, list[str]]] = []

    async def make(partitions_by_topic: dict[str, int]) -> str:
        prefix = await create_topics(kafka_bootstrap, partitions_by_topic)
        made.append((prefix, list(partitions_by_topic)))
        return prefix

    yield make
    for prefix, names in made:
        await delete_topics(kafka_bootstrap, prefix, names)


@pytest.fixture(scope="session")
async def shared_platform(
    infra: Infrastructure, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Platform]:
    """One platform started as `make up` starts it (scripts/platform.sh with its own
    databases, topics, ports and state folder), shared by every suite that asks for it:
    each test makes its own studio, slots, organisation and members, so none depends on
    another, and a test that stops a part starts it again before it ends."""
    state: Path = tmp_path_factory.mktemp("platform") / "state"
    async with started_platform(infra, state) as started:
        yield started


@pytest.fixture(scope="session")
def platform(shared_platform: Platform) -> Platform:
    """The shared platform under the name most suites use (tests/e2e/ has a `platform` of
    its own, in-process; a test there reaches the shared one as `shared_platform`)."""
    return shared_platform
