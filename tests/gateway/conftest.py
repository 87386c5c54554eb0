"""One platform for the gateway's tests, started as `make up` starts it (scripts/platform.sh
with its own databases, topics, ports and state folder), shared by all of them: each test
makes its own studio, slots, organisation and members, so none depends on another, and a
test that stops a part starts it again before it ends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.gateway.api import Api
from tests.support.infrastructure import Infrastructure
from tests.support.platform import Platform, started_platform


@pytest.fixture(scope="session")
async def platform(
    infra: Infrastructure, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Platform]:
    state: Path = tmp_path_factory.mktemp("platform") / "state"
    async with started_platform(infra, state) as started:
        yield started


@pytest.fixture
async def api(platform: Platform) -> AsyncIterator[Api]:
    async with Api.at(platform.gateway) as client:
        yield client
