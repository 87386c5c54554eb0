"""The gateway's tests run on the one shared platform (tests/conftest.py's `platform`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.gateway.api import Api
from tests.support.platform import Platform


@pytest.fixture
async def api(platform: Platform) -> AsyncIterator[Api]:
    async with Api.at(platform.gateway) as client:
        yield client
