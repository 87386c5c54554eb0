"""A service that is down or hung: the gateway answers 503 problem bodies within its deadline,
never hangs, and /readyz names what is missing; once the service is back, requests succeed.
Each test starts again what it stopped (the platform is shared by the gateway's tests)."""

from __future__ import annotations

import os
import signal
import time

import httpx

from tests.gateway.api import Api
from tests.support.platform import Platform
from tests.support.waiting import eventually

# The gateway's deadline of one call to a service is 3 s; a hang would be the test's 300 s.
NO_HANG_S = 10


async def _bookings_answer(api: Api, org_id: str, user: str) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    answer = await api.call("GET", f"/v1/orgs/{org_id}/bookings", user)
    return answer, time.monotonic() - started


async def test_a_stopped_service_is_503_and_named_by_readyz_until_it_is_back(
    api: Api, platform: Platform
) -> None:
    org = await api.org()
    assert (await api.call("GET", "/readyz")).status_code == 200
    os.kill(platform.pid("booking"), signal.SIGKILL)

    async def refused() -> httpx.Response | None:
        answer, took = await _bookings_answer(api, org.org_id, org.owner)
        assert took < NO_HANG_S
        return answer if answer.status_code == 503 else None

    down = await eventually(refused, 30)
    assert down.headers["content-type"] == "application/problem+json"
    assert down.json()["code"] == "service_unavailable"
    assert down.json()["service"] == "booking"
    assert "127.0.0.1" not in down.text  # the problem names the service, not its address
    ready = await api.call("GET", "/readyz")
    assert ready.status_code == 503
    assert ready.json()["missing"] == ["booking"]
    # What does not need the booking service still works.
    assert (await api.call("GET", "/v1/plans")).status_code == 200

    await platform.up()

    async def served() -> bool:
        answer, _ = await _bookings_answer(api, org.org_id, org.owner)
        return answer.status_code == 200

    await eventually(served, 30)
    assert (await api.call("GET", "/readyz")).status_code == 200


async def test_a_hung_service_is_503_within_the_deadline_not_a_hang(
    api: Api, platform: Platform
) -> None:
    org = await api.org()
    pid = platform.pid("booking")
    os.kill(pid, signal.SIGSTOP)
    try:
        answer, took = await _bookings_answer(api, org.org_id, org.owner)
        assert answer.status_code == 503, answer.text
        assert answer.json()["code"] == "service_unavailable"
        assert took < NO_HANG_S
        ready = await api.call("GET", "/readyz")
        assert ready.status_code == 503 and "booking" in ready.json()["missing"]
    finally:
        os.kill(pid, signal.SIGCONT)

    async def served() -> bool:
        answer, _ = await _bookings_answer(api, org.org_id, org.owner)
        return answer.status_code == 200

    await eventually(served, 30)
