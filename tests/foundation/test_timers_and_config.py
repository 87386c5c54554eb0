"""Durable timers fire once, survive restarts and carry the state they expect; bad settings
stop a process before it starts."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from servicekit import config
from servicekit.retry import RetryPolicy
from servicekit.timers import DueTimer, TimerRunner, Timers
from tests.foundation.conftest import Pair
from tests.support.infrastructure import REPO_ROOT


def _recording_runner(pair: Pair, fired: list[DueTimer]) -> TimerRunner:
    side = pair.consumer

    async def release(session, timer: DueTimer) -> None:  # type: ignore[no-untyped-def]
        fired.append(timer)
        await session.execute(
            side.applied.insert().values(
                event_id=str(timer.timer_id), aggregate_id=timer.aggregate_id, note="fired"
            )
        )

    return TimerRunner(side.sessions, side.tables.timers, {"release_hold": release})


async def test_a_timer_due_while_no_runner_was_alive_fires_once_when_one_starts(
    pair: Pair,
) -> None:
    side = pair.consumer
    booking = str(uuid.uuid4())
    async with side.sessions() as session, session.begin():
        await Timers(side.tables.timers).schedule(
            session,
            "release_hold",
            booking,
            datetime.now(UTC) - timedelta(minutes=5),
            {"booking_id": booking, "state": "pending"},
        )
    fired: list[DueTimer] = []
    runners = [_recording_runner(pair, fired) for _ in range(4)]  # racing runners
    await asyncio.gather(*(runner.fire_due() for runner in runners))
    await asyncio.gather(*(runner.fire_due() for runner in runners))
    assert [timer.expected for timer in fired] == [{"booking_id": booking, "state": "pending"}]
    assert await side.applied_count(booking) == 1


async def test_a_timer_not_yet_due_or_cancelled_does_not_fire(pair: Pair) -> None:
    side = pair.consumer
    later, cancelled = str(uuid.uuid4()), str(uuid.uuid4())
    timers = Timers(side.tables.timers)
    async with side.sessions() as session, session.begin():
        await timers.schedule(
            session, "release_hold", later, datetime.now(UTC) + timedelta(hours=1), {}
        )
        await timers.schedule(
            session, "release_hold", cancelled, datetime.now(UTC) - timedelta(seconds=1), {}
        )
        assert await timers.cancel(session, "release_hold", cancelled) == 1
    fired: list[DueTimer] = []
    assert await _recording_runner(pair, fired).fire_due() == 0
    assert fired == []


async def test_a_failing_timer_is_retried_then_marked_failed_and_its_effect_rolled_back(
    pair: Pair,
) -> None:
    side = pair.consumer
    booking = str(uuid.uuid4())

    async def half_then_fail(session, timer: DueTimer) -> None:  # type: ignore[no-untyped-def]
        await session.execute(
            side.applied.insert().values(event_id="x", aggregate_id=booking, note="half")
        )
        raise RuntimeError("provider said no")

    async with side.sessions() as session, session.begin():
        await Timers(side.tables.timers).schedule(
            session, "revoke", booking, datetime.now(UTC) - timedelta(seconds=1), {}
        )
    runner = TimerRunner(
        side.sessions,
        side.tables.timers,
        {"revoke": half_then_fail},
        policy=RetryPolicy(max_attempts=2, base_delay_s=0.01),
    )
    for _ in range(20):
        await runner.fire_due()
        await asyncio.sleep(0.05)
    t = side.tables.timers.c
    async with side.sessions() as session:
        row = (await session.execute(select(t.state, t.attempts, t.last_error))).one()
    assert (row.state, row.attempts) == ("failed", 2)
    assert "provider said no" in row.last_error
    assert await side.applied_count(booking) == 0


def test_a_missing_setting_is_named_and_stops_the_process() -> None:
    with pytest.raises(config.SettingError, match="LIFTFIT_SURELY_UNSET"):
        config.required("LIFTFIT_SURELY_UNSET")
    with pytest.raises(config.SettingError, match="must be an integer"):
        import os

        os.environ["LIFTFIT_NOT_A_NUMBER"] = "ten"
        config.integer("LIFTFIT_NOT_A_NUMBER")


@pytest.mark.parametrize("service", ["booking", "payment"])
def test_a_service_refuses_to_start_naming_the_missing_setting(service: str) -> None:
    env = {"PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-m", f"services.{service}"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "refusing to start: setting" in result.stderr
