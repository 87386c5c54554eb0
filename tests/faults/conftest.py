"""Fixtures of the fault suite: the services as real processes (tests/support/processes.py)
on this test's databases and topics, one sandbox card gateway process for the suite, and
the HTTP gateway in this process (tests/support/notification_entry.py), which the card
gateway notifies and which hands the notifications to the payment process.

Every process a test started is killed when it ends, pass or fail; when it fails, the
report shows the last lines of each service's log.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from pathlib import Path

import httpx
import pytest

from tests.notify.conftest import mail_sandbox  # noqa: F401  (the notify workers' case)
from tests.support.card_gateway import running_card_gateway
from tests.support.infrastructure import Infrastructure
from tests.support.notification_entry import NotificationEntry
from tests.support.platform import grant_kafka_access
from tests.support.processes import (
    RUNNING_PLATFORM,
    ProcessPlatform,
    Sandbox,
    service_environment,
)
from tests.support.sandboxes import SandboxAuth

API_KEY = "sk_test_fault_suite"
SECRETS = ("whsec_fault_current", "whsec_fault_previous")
TOPICS = {
    "booking.events": 3,
    "booking.events.dlq": 1,
    "payment.events": 3,
    "payment.events.dlq": 1,
    "access.events": 1,
    "notify.events": 1,
}
MakePlatform = Callable[..., Awaitable[ProcessPlatform]]


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    with running_card_gateway(tmp_path_factory.mktemp("fault_sandbox"), API_KEY, SECRETS) as url:
        yield Sandbox(url, API_KEY, SECRETS)


async def point_sandbox_at(sandbox: Sandbox, notify_url: str) -> None:
    """Forgets the sandbox's payments and sends its notifications to `notify_url`."""
    async with httpx.AsyncClient(base_url=sandbox.url, auth=SandboxAuth(), timeout=5) as client:
        (await client.post("/_sandbox/reset")).raise_for_status()
        (await client.post("/_sandbox/config", json={"notify_url": notify_url})).raise_for_status()


@pytest.fixture
async def make_platform(
    request: pytest.FixtureRequest,
    infra: Infrastructure,
    service_database: Callable[[str], str],
    new_topics: Callable[[dict[str, int]], Awaitable[str]],
    kafka_bootstrap: str,
    sandbox: Sandbox,
    tmp_path: Path,
) -> AsyncIterator[MakePlatform]:
    """Builds the test's platform (databases, topics, environment) and serves its
    notification entry; starts no service."""
    made: list[ProcessPlatform] = []
    entries: list[NotificationEntry] = []

    async def make(**overrides: str) -> ProcessPlatform:
        prefix = await new_topics(TOPICS)
        await grant_kafka_access(infra, prefix)  # each process is its own principal
        env = service_environment(
            booking_database_url=service_database("booking"),
            payment_database_url=service_database("payment"),
            kafka_bootstrap=kafka_bootstrap,
            topic_prefix=prefix,
            sandbox=sandbox,
            overrides=overrides,
        )
        entry = NotificationEntry(env["PAYMENT_GRPC_ADDRESS"])
        await entry.start()
        entries.append(entry)
        env["PAYMENT_RETURN_URL"] = entry.return_url
        platform = ProcessPlatform(env, tmp_path, sandbox)
        await point_sandbox_at(sandbox, entry.url)
        made.append(platform)
        request.node.stash[RUNNING_PLATFORM] = platform
        return platform

    try:
        yield make
    finally:
        for platform in made:
            platform.stop_all()
        for entry in entries:
            await entry.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    platform = item.stash.get(RUNNING_PLATFORM, None)
    if report.failed and platform is not None:
        report.sections.append(("service logs", platform.log_report()))
    return report
