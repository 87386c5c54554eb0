"""The fault schedule of the chaos soak, drawn from a seed: replayed exactly, different for
another seed, every kind at least three times in ten minutes and once in two, and no two
faults that would spoil each other (two outages, two stops of one process, a restart
without its database, a sandbox's faults while it restarts) at the same time."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from chaos.schedule import (
    CARD_GATEWAY,
    CONSUMERS,
    INFRASTRUCTURE_KINDS,
    KILLABLE,
    FaultKind,
    PlannedFault,
    ScheduleError,
    conflicts,
    contends,
    heal_at,
    plan,
)

SEEDS = random.Random().sample(range(2**32), 20)


def _fault(kind: FaultKind, target: str, offset: float = 0.0, **parameters: object) -> PlannedFault:
    return PlannedFault(offset, kind, target, 10.0, parameters)


def test_the_same_seed_gives_the_same_schedule() -> None:
    for seed in SEEDS:
        assert plan(seed, 10) == plan(seed, 10)


def test_another_seed_gives_another_order_of_faults() -> None:
    for seed in SEEDS:
        one = [(f.kind, f.target) for f in plan(seed, 10)]
        other = [(f.kind, f.target) for f in plan(seed + 1, 10)]
        assert one != other


@pytest.mark.parametrize("minutes", [10, 15, 30])
def test_every_kind_comes_at_least_three_times_in_ten_minutes(minutes: int) -> None:
    for seed in SEEDS:
        counts = Counter(fault.kind for fault in plan(seed, minutes))
        assert {kind: counts[kind] for kind in FaultKind if counts[kind] < 3} == {}


@pytest.mark.parametrize("minutes", [2, 3, 5])
def test_every_kind_comes_at_least_once_in_a_short_soak(minutes: int) -> None:
    for seed in SEEDS:
        counts = Counter(fault.kind for fault in plan(seed, minutes))
        assert {kind for kind in FaultKind if counts[kind] < 1} == set()


def test_a_short_soak_replays_its_seed_and_keeps_faults_apart() -> None:
    for seed in SEEDS:
        faults = plan(seed, 2)
        assert faults == plan(seed, 2)
        assert all(f.offset > 0 and f.until <= heal_at(2) for f in faults)
        for a, b in itertools.combinations(faults, 2):
            assert not conflicts(a, b), (a, b)


def test_every_process_is_killed_and_every_consumer_paused() -> None:
    for seed in SEEDS:
        faults = plan(seed, 10)
        killed = {f.target for f in faults if f.kind == FaultKind.PROCESS_KILL}
        paused = {f.target for f in faults if f.kind == FaultKind.CONSUMER_PAUSE}
        assert killed == set(KILLABLE)
        assert paused == set(CONSUMERS)


def test_no_two_contending_faults_overlap() -> None:
    for seed in SEEDS:
        for a, b in itertools.combinations(plan(seed, 10), 2):
            assert not conflicts(a, b), (a, b)


def test_kafka_and_postgres_are_never_down_together_nor_a_process_stopped_twice() -> None:
    for seed in SEEDS:
        faults = plan(seed, 10)
        outages = [f for f in faults if f.kind in INFRASTRUCTURE_KINDS]
        for a, b in itertools.pairwise(outages):
            assert a.offset + a.duration < b.offset
        stops = [f for f in faults if f.kind in (FaultKind.PROCESS_KILL, FaultKind.CONSUMER_PAUSE)]
        for a, b in itertools.combinations(stops, 2):
            if a.target == b.target:
                assert a.until <= b.offset or b.until <= a.offset, (a, b)


def test_every_fault_and_its_recovery_end_by_the_heal_point() -> None:
    for seed in SEEDS:
        faults = plan(seed, 10)
        assert faults == sorted(faults, key=lambda f: f.offset)
        assert all(f.offset > 0 and f.until <= heal_at(10) for f in faults)


def test_outages_last_as_long_as_the_soak_asks() -> None:
    for seed in SEEDS:
        for fault in plan(seed, 10):
            if fault.kind == FaultKind.KAFKA_OUTAGE:
                assert 20 <= fault.duration <= 30
            if fault.kind == FaultKind.POSTGRES_OUTAGE:
                assert fault.duration == 10


def test_a_timeout_hangs_longer_than_the_providers_clients_wait() -> None:
    timeouts = [f for seed in SEEDS for f in plan(seed, 10) if f.kind.endswith("_timeout")]
    assert timeouts
    assert all(int(str(f.parameters["hang_seconds"])) > 5 for f in timeouts)


def test_what_contends_and_what_may_run_alongside() -> None:
    kill_card = _fault(FaultKind.PROCESS_KILL, CARD_GATEWAY)
    duplicates = _fault(
        FaultKind.CARD_NOTIFICATIONS_DUPLICATED, CARD_GATEWAY, duplicate_notifications=1
    )
    drops = _fault(FaultKind.CARD_NOTIFICATIONS_DROPPED, CARD_GATEWAY, drop_notifications=True)
    creates = _fault(
        FaultKind.CARD_CREATE_TIMEOUT, CARD_GATEWAY, timeout_next_creates=1, hang_seconds=6
    )
    refunds = _fault(
        FaultKind.CARD_REFUND_TIMEOUT, CARD_GATEWAY, timeout_next_refunds=1, hang_seconds=6
    )
    database = _fault(FaultKind.POSTGRES_OUTAGE, "postgres")
    broker = _fault(FaultKind.KAFKA_OUTAGE, "kafka")
    kill_booking = _fault(FaultKind.PROCESS_KILL, "booking")
    pause_booking = _fault(FaultKind.CONSUMER_PAUSE, "booking")
    pause_notify = _fault(FaultKind.CONSUMER_PAUSE, "notify")
    assert contends(kill_card, duplicates)  # a restarted sandbox forgets its faults
    assert contends(creates, refunds)  # both set the sandbox's hang
    assert contends(database, kill_booking)  # the restart migrates the schemas first
    assert contends(database, broker)
    assert contends(kill_booking, pause_booking)
    assert not contends(duplicates, drops)
    assert not contends(broker, kill_booking)
    assert not contends(pause_booking, pause_notify)
    later = PlannedFault(kill_booking.until, FaultKind.CONSUMER_PAUSE, "booking", 5.0)
    assert not conflicts(kill_booking, later)


def test_a_soak_too_short_for_every_kind_once_is_refused() -> None:
    with pytest.raises(ScheduleError):
        plan(1, 1.5)
