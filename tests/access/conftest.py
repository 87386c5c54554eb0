"""The access suite's fixtures: the real sandbox lock provider process (once per session,
reset for every test) and, per test, a fresh migrated database and the access service
built by its own bootstrap(), driven step by step (tests/access/harness.py)."""

from __future__ import annotations

import base64
import dataclasses
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest

from services.access.bootstrap import bootstrap
from services.access.settings import Settings
from tests.access.harness import API_KEY, DEVICE, DEVICES, AccessHarness
from tests.support import tls
from tests.support.sandboxes import SandboxAuth, running_lock_provider

HarnessFactory = Callable[..., Awaitable[AccessHarness]]


def new_key(key_id: str) -> tuple[str, bytes]:
    return key_id, os.urandom(32)


def key_setting(keys: tuple[tuple[str, bytes], ...]) -> str:
    return ",".join(f"{key_id}:{base64.b64encode(key).decode()}" for key_id, key in keys)


@pytest.fixture(scope="session")
def lock_provider_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_lock_provider(tmp_path_factory.mktemp("lock_provider"), API_KEY, DEVICES) as url:
        yield url


def access_settings(
    database_url: str, kafka_bootstrap: str, lock_url: str, prefix: str
) -> Settings:
    return Settings(
        tls_dir=tls.folder("access"),
        database_url=database_url,
        kafka_bootstrap=kafka_bootstrap,
        grpc_address="127.0.0.1:0",
        topic_prefix=prefix,
        idempotency_secret=f"test-secret-{uuid.uuid4().hex}".encode(),
        lock_provider_url=lock_url,
        lock_provider_api_key=API_KEY,
        default_device=DEVICE,
        pin_keys=(new_key("k1"),),
        # The activation window is open for any slot of the next days.
        activation_lead_s=30 * 86400,
        lock_provider_timeout_s=1.0,
        provider_retry_base_s=0.05,
        provider_max_tries=3,
        activation_grace_s=0,
        revocation_overdue_s=3600,
    )


access_settings.__test__ = False  # type: ignore[attr-defined]


@pytest.fixture
async def make_access(
    service_database: Callable[[str], str], kafka_bootstrap: str, lock_provider_url: str
) -> AsyncIterator[HarnessFactory]:
    made: list[AccessHarness] = []

    async def make(**overrides: Any) -> AccessHarness:
        settings = access_settings(
            service_database("access"),
            kafka_bootstrap,
            lock_provider_url,
            f"t{uuid.uuid4().hex[:8]}.",
        )
        app = bootstrap(dataclasses.replace(settings, **overrides))
        lock = httpx.AsyncClient(base_url=lock_provider_url, auth=SandboxAuth(API_KEY), timeout=10)
        (await lock.post("/_sandbox/reset")).raise_for_status()
        harness = AccessHarness(app, lock)
        made.append(harness)
        return harness

    yield make
    for harness in made:
        await harness.lock.aclose()
        await harness.app.deps.provider.aclose()
        await harness.app.runtime.engine.dispose()


@pytest.fixture
async def access(make_access: HarnessFactory) -> AccessHarness:
    return await make_access()
