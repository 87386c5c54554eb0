"""Durable timers fire once, survive restarts and carry the state they expect; bad settings
stop a process before it starts."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from servicekit import config
from servicekit.incidents import Incidents
from servicekit.retry import RetryPolicy
from servicekit.timers import DueTimer, TimerRunner, Timers
from tests.foundation.conftest import Pair
from tests.foundation.harness import Side, eventually, switch_class
from tests.support import waiting
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


async def _schedule_due(side: Side, kind: str, aggregate_id: str) -> None:
    async with side.sessions() as session, session.begin():
        await Timers(side.tables.timers).schedule(
            session, kind, aggregate_id, datetime.now(UTC) - timedelta(seconds=1), {}
        )


async def test_a_slow_outbound_job_does_not_delay_another_due_timer(pair: Pair) -> None:
    side = pair.consumer
    slow_started, release_slow = asyncio.Event(), asyncio.Event()
    fast_fired_at: list[float] = []

    async def slow_call(timer: DueTimer) -> None:
        slow_started.set()
        await release_slow.wait()  # a provider that hangs, with no transaction open

    async def fast(session, timer: DueTimer) -> None:  # type: ignore[no-untyped-def]
        fast_fired_at.append(asyncio.get_running_loop().time())

    runner = TimerRunner(
        side.sessions, side.tables.timers, {"fast": fast}, outbound={"slow": slow_call}
    )
    stopping = asyncio.Event()
    running = asyncio.create_task(runner.run(stopping))
    try:
        await _schedule_due(side, "slow", "a")
        await asyncio.wait_for(slow_started.wait(), 10)
        due = asyncio.get_running_loop().time()
        await _schedule_due(side, "fast", "b")

        async def fast_fired() -> bool:
            return bool(fast_fired_at)

        await eventually(fast_fired, 10)
        assert fast_fired_at[0] - due < 1.0
    finally:
        release_slow.set()
        stopping.set()
        await running


async def test_a_timer_that_uses_up_its_attempts_opens_an_incident(pair: Pair) -> None:
    side = pair.consumer
    aggregate = str(uuid.uuid4())

    async def always_fails(timer: DueTimer) -> None:
        raise RuntimeError("the lock provider refuses")

    await _schedule_due(side, "revoke", aggregate)
    runner = TimerRunner(
        side.sessions,
        side.tables.timers,
        {},
        outbound={"revoke": always_fails},
        policy=RetryPolicy(max_attempts=2, base_delay_s=0.01),
        incidents=Incidents(side.tables.incidents),
    )

    async def incident() -> Any:
        await runner.fire_due()
        async with side.sessions() as session:
            return list(await Incidents(side.tables.incidents).listed(session, "open"))

    [opened] = await waiting.eventually(incident, 10)
    assert (opened.kind, opened.subject_id) == ("timer_failed", f"revoke:{aggregate}")
    assert "the lock provider refuses" in opened.detail


async def test_a_timer_claimed_by_a_runner_that_died_is_fired_once_its_lease_ends(
    pair: Pair,
) -> None:
    side = pair.consumer
    aggregate = str(uuid.uuid4())
    fired: list[DueTimer] = []
    await _schedule_due(side, "release_hold", aggregate)
    dead = TimerRunner(side.sessions, side.tables.timers, {}, lease_s=0.5)
    [claimed] = await dead._claim(10)  # claimed and committed, then the runner died
    assert claimed.aggregate_id == aggregate
    survivor = _recording_runner(pair, fired)
    assert await survivor.fire_due() == 0  # the lease still holds

    async def fired_after_lease() -> bool:
        await survivor.fire_due()
        return bool(fired)

    await eventually(fired_after_lease, 10)
    assert [timer.aggregate_id for timer in fired] == [aggregate]
    assert await survivor.fire_due() == 0  # fired once


async def test_whether_an_aggregate_has_a_pending_timer_is_read_from_an_index_not_the_table(
    pair: Pair,
) -> None:
    """Access keeps a pending revocation for every grant still ahead, and a week of fired
    timers (servicekit.retention); a handler's question about one aggregate must read
    neither all the pending ones nor the fired."""
    side = pair.consumer
    timers = Timers(side.tables.timers)
    async with side.engine.begin() as connection:
        await connection.exec_driver_sql(
            "INSERT INTO timers (timer_id, kind, aggregate_id, due_at, expected, headers, state)"
            " SELECT gen_random_uuid(), 'revoke', g::text, now() + g * interval '1 minute',"
            " '{}', '{}', CASE WHEN mod(g, 2) = 0 THEN 'fired' ELSE 'pending' END"
            " FROM generate_series(1, 5000) g"
        )
    async with side.sessions() as session, session.begin():
        await timers.schedule(session, "revoke", "5001", datetime.now(UTC), {})
    async with side.engine.connect() as connection:
        await connection.exec_driver_sql("ANALYZE timers")
        plan = await connection.exec_driver_sql(
            "EXPLAIN " + timers._pending,  # the statement has_pending runs
            {"kind": "revoke", "aggregate_id": "5001"},
        )
        lines = " ".join(str(row[0]) for row in plan)
    assert "timers_pending_by_aggregate" in lines, lines
    async with side.sessions() as session:
        assert await timers.has_pending(session, "revoke", "5001")
        assert not await timers.has_pending(session, "revoke", "16")  # fired


async def test_a_handlers_writes_left_unflushed_commit_with_the_fired_mark_or_not_at_all(
    pair: Pair,
) -> None:
    # The session's pending ORM writes reach the database inside the transaction that marks
    # the timer fired, not after its commit and on their own.
    side = pair.consumer

    Switch = switch_class(side)
    taken, fresh, clashing = (str(uuid.uuid4()) for _ in range(3))
    async with side.sessions() as session, session.begin():
        await session.execute(side.switches.insert().values(name=taken))
        for booking in (fresh, clashing):
            await Timers(side.tables.timers).schedule(
                session, "open_door", booking, datetime.now(UTC) - timedelta(seconds=1), {}
            )

    async def open_door(session, timer: DueTimer) -> None:  # type: ignore[no-untyped-def]
        await session.execute(
            side.applied.insert().values(
                event_id=str(timer.timer_id), aggregate_id=timer.aggregate_id, note="opened"
            )
        )
        session.add(Switch(taken if timer.aggregate_id == clashing else timer.aggregate_id))

    runner = TimerRunner(
        side.sessions,
        side.tables.timers,
        {"open_door": open_door},
        policy=RetryPolicy(max_attempts=1, base_delay_s=0.01),
    )
    assert await runner.fire_due() == 2
    t = side.tables.timers.c

    async def state_of(booking: str) -> str:
        return str(await side.scalar(select(t.state).where(t.aggregate_id == booking)))

    await eventually(lambda: _settled(state_of, fresh, clashing))
    assert (await state_of(fresh), await side.applied_count(fresh)) == ("fired", 1)
    assert (await state_of(clashing), await side.applied_count(clashing)) == ("failed", 0)


async def _settled(state_of: Any, *bookings: str) -> bool:
    return all([await state_of(booking) in ("fired", "failed") for booking in bookings])
