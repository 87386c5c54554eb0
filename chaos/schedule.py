"""The soak's fault schedule, drawn from a seed: the same seed gives the same faults, in the
same order, on the same targets, with the same durations and parameters.

`plan(seed, minutes)` uses nothing but `random.Random(seed)`, so a failing soak is replayed
by its seed. Every kind comes at least three times in ten minutes (each process is killed
and each consumer paused at least once in that time) and at least once in the shortest soak
(two minutes, the one `make test` runs), and two faults that would spoil each
other never overlap: they are given resources, a fault claims some for itself alone and
needs others to be left alone (`conflicts`). Kafka's and PostgreSQL's outages claim the
infrastructure, so they never overlap; a killed process is restarted by `platform.sh up`,
which migrates the schemas first, so a kill needs PostgreSQL; a sandbox restarted forgets
its faults, so a sandbox's faults need its process; two faults setting one field of a
sandbox (the hang of its timeouts) would undo each other. Every fault, the time its target
takes to recover included, ends by `heal_at(minutes)`, where the driver heals everything
before it waits for quiescence.
"""

from __future__ import annotations

import contextlib
import math
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

MIN_MINUTES = 2  # every kind once, the outages one after the other
PLACEMENTS = 20  # draws of the placement before a schedule is called impossible
LEAD_S = 10.0  # the workload is under way before the first fault


class FaultKind(StrEnum):
    PROCESS_KILL = "process_kill"
    CONSUMER_PAUSE = "consumer_pause"
    KAFKA_OUTAGE = "kafka_outage"
    POSTGRES_OUTAGE = "postgres_outage"
    CARD_NOTIFICATIONS_DUPLICATED = "card_notifications_duplicated"
    CARD_NOTIFICATIONS_REORDERED = "card_notifications_reordered"
    CARD_NOTIFICATIONS_DELAYED = "card_notifications_delayed"
    CARD_NOTIFICATIONS_DROPPED = "card_notifications_dropped"
    CARD_CREATE_TIMEOUT = "card_create_timeout"
    CARD_REFUND_TIMEOUT = "card_refund_timeout"
    LOCK_CREATE_TIMEOUT = "lock_create_timeout"
    LOCK_DELETE_TIMEOUT = "lock_delete_timeout"
    MAIL_DROPPED_AFTER_DATA = "mail_dropped_after_data"
    MAIL_REFUSED_4XX = "mail_refused_4xx"


CARD_GATEWAY, LOCK_PROVIDER, MAIL_SANDBOX = "card-gateway", "lock-provider", "mail-sandbox"
CONSUMERS = ("booking", "payment", "access", "notify")
# The names scripts/platform.sh gives the processes (their pid files).
KILLABLE = (*CONSUMERS, "gateway", CARD_GATEWAY, LOCK_PROVIDER, MAIL_SANDBOX)
KAFKA, POSTGRES = "kafka", "postgres"
INFRASTRUCTURE = "infrastructure"

SANDBOX_OF = {
    FaultKind.CARD_NOTIFICATIONS_DUPLICATED: CARD_GATEWAY,
    FaultKind.CARD_NOTIFICATIONS_REORDERED: CARD_GATEWAY,
    FaultKind.CARD_NOTIFICATIONS_DELAYED: CARD_GATEWAY,
    FaultKind.CARD_NOTIFICATIONS_DROPPED: CARD_GATEWAY,
    FaultKind.CARD_CREATE_TIMEOUT: CARD_GATEWAY,
    FaultKind.CARD_REFUND_TIMEOUT: CARD_GATEWAY,
    FaultKind.LOCK_CREATE_TIMEOUT: LOCK_PROVIDER,
    FaultKind.LOCK_DELETE_TIMEOUT: LOCK_PROVIDER,
    FaultKind.MAIL_DROPPED_AFTER_DATA: MAIL_SANDBOX,
    FaultKind.MAIL_REFUSED_4XX: MAIL_SANDBOX,
}
INFRASTRUCTURE_KINDS = (FaultKind.KAFKA_OUTAGE, FaultKind.POSTGRES_OUTAGE)

# How many of a kind come in ten minutes: every process killed, every consumer paused.
PER_TEN_MINUTES = {
    kind: {FaultKind.PROCESS_KILL: len(KILLABLE), FaultKind.CONSUMER_PAUSE: len(CONSUMERS)}.get(
        kind, 3
    )
    for kind in FaultKind
}
# After a fault's heal its target needs this long to serve again (a restart, a broker that
# elects its controller and loads its partitions); the schedule keeps it as part of the fault.
RECOVERY_S = {
    FaultKind.PROCESS_KILL: 45.0,
    FaultKind.CONSUMER_PAUSE: 5.0,
    FaultKind.KAFKA_OUTAGE: 45.0,
    FaultKind.POSTGRES_OUTAGE: 20.0,
}
# How long a sandbox's fault stays switched on; shorter in a soak of less than ten minutes,
# where each sandbox's kill and its contending faults (two that set its hang) must fit too.
SANDBOX_FAULT_S, SHORT_SANDBOX_FAULT_S = (15.0, 40.0), (10.0, 20.0)
# The providers' clients give up after 5 s: a hang longer than that is a timeout.
HANG_S = (6, 12)


class ScheduleError(ValueError):
    """No schedule of that length holds every kind without overlaps it forbids."""


@dataclass(frozen=True)
class PlannedFault:
    offset: float  # seconds from the start of the soak
    kind: FaultKind
    target: str
    duration: float  # seconds from the fault's apply to its heal
    parameters: Mapping[str, object] = field(default_factory=dict)

    @property
    def until(self) -> float:
        """When the fault and its target's recovery are over."""
        return self.offset + self.duration + RECOVERY_S.get(self.kind, 0.0)

    @property
    def claims(self) -> frozenset[str]:
        """What no other fault may touch meanwhile."""
        if self.kind in (FaultKind.PROCESS_KILL, FaultKind.CONSUMER_PAUSE):
            return frozenset({f"process:{self.target}"})
        if self.kind in INFRASTRUCTURE_KINDS:
            return frozenset({self.target, INFRASTRUCTURE})
        return frozenset(f"{self.target}:{name}" for name in self.parameters)

    @property
    def needs(self) -> frozenset[str]:
        """What must stay up meanwhile; other faults needing it too may run alongside."""
        if self.kind == FaultKind.PROCESS_KILL:
            return frozenset({POSTGRES})
        if self.kind in SANDBOX_OF:
            return frozenset({f"process:{self.target}"})
        return frozenset()


def contends(a: PlannedFault, b: PlannedFault) -> bool:
    """Whether the two faults may not overlap in time: one claims what the other needs or
    claims."""
    return bool(a.claims & (b.claims | b.needs) or b.claims & a.needs)


def conflicts(a: PlannedFault, b: PlannedFault) -> bool:
    """Whether the two faults contend and overlap in time, recoveries included."""
    return a.offset < b.until and b.offset < a.until and contends(a, b)


def heal_at(minutes: float) -> float:
    """When every fault has healed and the soak goes on to quiescence."""
    return minutes * 60.0


def plan(seed: int, minutes: float) -> list[PlannedFault]:
    """The faults of a soak of `minutes`, by offset."""
    if minutes < MIN_MINUTES:
        raise ScheduleError(f"a soak of {minutes} minutes is too short for every kind")
    rng = random.Random(seed)
    kinds = [kind for kind in FaultKind for _ in range(_how_many(kind, minutes))]
    extras = [k for k in FaultKind if k not in INFRASTRUCTURE_KINDS]
    kinds += [rng.choice(extras) for _ in range(rng.randint(0, math.ceil(minutes / 2)))]
    rng.shuffle(kinds)
    targets = _targets(rng)
    drawn = [_draw(rng, kind, targets, minutes) for kind in kinds]
    horizon = heal_at(minutes)
    # A short soak is crowded: a placement that leaves one fault no room is drawn again, from
    # the same generator, so the seed still decides the schedule.
    for _ in range(PLACEMENTS - 1):
        with contextlib.suppress(ScheduleError):
            return _placed(drawn, rng, horizon)
    return _placed(drawn, rng, horizon)


def _placed(drawn: list[PlannedFault], rng: random.Random, horizon: float) -> list[PlannedFault]:
    placed = _spread_outages([f for f in drawn if f.kind in INFRASTRUCTURE_KINDS], rng, horizon)
    # Kills first: each needs its sandbox free of faults and PostgreSQL up for a minute.
    rest = sorted(
        (f for f in drawn if f.kind not in INFRASTRUCTURE_KINDS),
        key=lambda f: f.kind != FaultKind.PROCESS_KILL,
    )
    for fault in rest:
        placed.append(_place(fault, placed, rng, horizon))
    return sorted(placed, key=lambda f: f.offset)


def _how_many(kind: FaultKind, minutes: float) -> int:
    return max(1, math.ceil(PER_TEN_MINUTES[kind] * minutes / 10))


def _targets(rng: random.Random) -> dict[FaultKind, list[str]]:
    """Each kind's targets in a drawn order, taken in turn, so every one comes up."""
    kills, pauses = list(KILLABLE), list(CONSUMERS)
    rng.shuffle(kills)
    rng.shuffle(pauses)
    return {FaultKind.PROCESS_KILL: kills, FaultKind.CONSUMER_PAUSE: pauses}


def _draw(
    rng: random.Random, kind: FaultKind, targets: dict[FaultKind, list[str]], minutes: float
) -> PlannedFault:
    """The fault's target, duration and parameters; its offset comes with its placement."""
    if kind in targets:
        turn = targets[kind]
        target = turn.pop(0)
        turn.append(target)
    else:
        target = SANDBOX_OF.get(kind) or (KAFKA if kind == FaultKind.KAFKA_OUTAGE else POSTGRES)
    duration = round(_duration(rng, kind, minutes), 1)
    return PlannedFault(0.0, kind, target, duration, _parameters(rng, kind))


def _duration(rng: random.Random, kind: FaultKind, minutes: float) -> float:
    match kind:
        case FaultKind.PROCESS_KILL:  # down before the orchestrator restarts it
            return rng.uniform(1, 5)
        case FaultKind.CONSUMER_PAUSE:
            return rng.uniform(5, 20)
        case FaultKind.KAFKA_OUTAGE:
            return rng.uniform(20, 30)
        case FaultKind.POSTGRES_OUTAGE:
            return 10.0
        case _:
            return rng.uniform(*(SANDBOX_FAULT_S if minutes >= 10 else SHORT_SANDBOX_FAULT_S))


def _parameters(rng: random.Random, kind: FaultKind) -> dict[str, object]:
    """The sandbox's fault fields, as its /_sandbox/faults takes them."""
    count = rng.randint(1, 3)
    hang = rng.randint(*HANG_S)
    match kind:
        case FaultKind.CARD_NOTIFICATIONS_DUPLICATED:
            return {"duplicate_notifications": count}
        case FaultKind.CARD_NOTIFICATIONS_REORDERED:
            return {"reorder_notifications": True}
        case FaultKind.CARD_NOTIFICATIONS_DELAYED:
            return {"delay_notifications_ms": rng.randint(1000, 8000)}
        case FaultKind.CARD_NOTIFICATIONS_DROPPED:
            return {"drop_notifications": True}
        case FaultKind.CARD_CREATE_TIMEOUT | FaultKind.LOCK_CREATE_TIMEOUT:
            return {"timeout_next_creates": count, "hang_seconds": hang}
        case FaultKind.CARD_REFUND_TIMEOUT:
            return {"timeout_next_refunds": count, "hang_seconds": hang}
        case FaultKind.LOCK_DELETE_TIMEOUT:
            return {"timeout_next_deletes": count, "hang_seconds": hang}
        case FaultKind.MAIL_DROPPED_AFTER_DATA:
            return {"drop_after_data": count}
        case FaultKind.MAIL_REFUSED_4XX:
            code = rng.choice((421, 450, 451, 452))
            return {
                "refuse_next": count,
                "refuse_code": code,
                "refuse_at": rng.choice(("data", "rcpt")),
            }
        case _:
            return {}


def _spread_outages(
    outages: list[PlannedFault], rng: random.Random, horizon: float
) -> list[PlannedFault]:
    """The outages one after the other, in their drawn order, with drawn gaps between them
    that share out the time they leave: placed one by one at random, they could leave no
    gap long enough for the last."""
    spans = [outage.until - outage.offset for outage in outages]
    # A tenth of a second spare around each: offsets are cut to tenths.
    room = horizon - LEAD_S - sum(spans) - 0.2 * len(outages)
    if room < 0:
        raise ScheduleError(f"{len(outages)} outages do not fit apart in {horizon:.0f} s")
    shares = [rng.random() for _ in range(len(outages) + 1)]
    gaps = [room * share / sum(shares) for share in shares]
    placed, start = [], LEAD_S
    for outage, span, gap in zip(outages, spans, gaps, strict=False):
        start += gap + 0.1
        placed.append(_at(outage, start))
        start += span + 0.1
    return placed


def _place(
    fault: PlannedFault, placed: list[PlannedFault], rng: random.Random, horizon: float
) -> PlannedFault:
    """At a drawn offset where it conflicts with nothing placed, else at the earliest such."""
    latest = horizon - (fault.until - fault.offset)
    for _ in range(50):
        candidate = _at(fault, rng.uniform(LEAD_S, latest))
        if _fits(candidate, placed, horizon):
            return candidate
    for start in sorted({LEAD_S, *(other.until + 0.1 for other in placed)}):
        candidate = _at(fault, start)
        if _fits(candidate, placed, horizon):
            return candidate
    raise ScheduleError(f"no room for {fault.kind} on {fault.target} in {horizon:.0f} s")


def _at(fault: PlannedFault, offset: float) -> PlannedFault:
    tenths = math.floor(offset * 10) / 10
    return PlannedFault(tenths, fault.kind, fault.target, fault.duration, fault.parameters)


def _fits(fault: PlannedFault, placed: Iterable[PlannedFault], horizon: float) -> bool:
    return fault.until <= horizon and not any(conflicts(fault, other) for other in placed)
