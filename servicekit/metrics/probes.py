"""The gauges every service reads from its own tables and the broker, one probe each.

Each probe is one short read-only query (the drift source's own queries for drift), so a
sample costs the database a handful of index or small-table reads every few seconds.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

from sqlalchemy import Table, extract, func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.lag import ConsumerLag
from servicekit.metrics.sampling import GaugeFamily, Probe, Reading, Samples, counted
from servicekit.operations.hooks import OPEN, DriftSource
from servicekit.schema import FAILED, PENDING
from servicekit.schema import OPEN as INCIDENT_OPEN

Sessions = async_sessionmaker[AsyncSession]
# A timer still pending this long after it was due is overdue: the runner claims due
# timers within a second, so a minute means it is failing, stuck or not running.
OVERDUE_AFTER = timedelta(seconds=60)

OUTBOX_PENDING = GaugeFamily(
    "liftfit_outbox_pending_rows", "Outbox rows not yet published (including ones retried later)"
)
OUTBOX_OLDEST = GaugeFamily(
    "liftfit_outbox_oldest_pending_age_seconds",
    "Age of the oldest pending outbox row (0 when none is pending)",
)
OUTBOX_FAILED = GaugeFamily(
    "liftfit_outbox_failed_rows", "Outbox rows that used up their attempts: they wait for a replay"
)
TIMERS_DUE = GaugeFamily(
    "liftfit_timers_due", "Durable timers due and not yet fired, by kind", ("kind",)
)
TIMERS_OVERDUE = GaugeFamily(
    "liftfit_timers_overdue",
    "Durable timers due over 60 s ago and not yet fired, by kind",
    ("kind",),
)
INCIDENTS_OPEN = GaugeFamily("liftfit_incidents_open", "Open incidents, by kind", ("kind",))
DRIFT_FINDINGS = GaugeFamily(
    "liftfit_drift_findings", "Open drift findings of the service's drift check, by kind", ("kind",)
)
CONSUMER_LAG = GaugeFamily(
    "liftfit_consumer_lag_messages",
    "Records a consumer group has yet to consume, per topic and partition (read_committed)",
    ("group", "topic", "partition"),
)


def outbox_probe(sessions: Sessions, outbox: Table) -> Probe:
    t = outbox.c
    pending, failed = t.state == PENDING, t.state == FAILED
    oldest = func.min(t.created_at).filter(pending)
    query = select(
        func.count().filter(pending),
        func.coalesce(extract("epoch", func.now() - oldest), 0),
        func.count().filter(failed),
    ).where(t.state.in_((PENDING, FAILED)))

    async def read() -> Reading:
        async with sessions() as session:
            row = (await session.execute(query)).one()
        return {
            OUTBOX_PENDING.name: {(): float(row[0])},
            OUTBOX_OLDEST.name: {(): max(0.0, float(row[1]))},
            OUTBOX_FAILED.name: {(): float(row[2])},
        }

    return Probe("outbox", (OUTBOX_PENDING, OUTBOX_OLDEST, OUTBOX_FAILED), read)


def timers_probe(sessions: Sessions, timers: Table) -> Probe:
    t = timers.c
    overdue = t.due_at <= func.now() - OVERDUE_AFTER
    query = (
        select(t.kind, func.count(), func.count().filter(overdue))
        .where(t.state == PENDING, t.due_at <= func.now())
        .group_by(t.kind)
    )

    async def read() -> Reading:
        async with sessions() as session:
            rows = (await session.execute(query)).all()
        return {
            TIMERS_DUE.name: counted([(kind, due) for kind, due, _ in rows]),
            TIMERS_OVERDUE.name: counted([(kind, late) for kind, _, late in rows]),
        }

    return Probe("timers", (TIMERS_DUE, TIMERS_OVERDUE), read)


def incidents_probe(sessions: Sessions, incidents: Table) -> Probe:
    t = incidents.c
    query = select(t.kind, func.count()).where(t.state == INCIDENT_OPEN).group_by(t.kind)

    async def read() -> Reading:
        async with sessions() as session:
            rows = (await session.execute(query)).all()
        return {INCIDENTS_OPEN.name: counted([(kind, n) for kind, n in rows])}

    return Probe("incidents", (INCIDENTS_OPEN,), read)


def drift_probe(sessions: Sessions, drift: DriftSource) -> Probe:
    async def read() -> Reading:
        async with sessions() as session:
            findings = await drift(session, OPEN)
        kinds = Counter(finding.kind for finding in findings)
        return {DRIFT_FINDINGS.name: counted(list(kinds.items()))}

    return Probe("drift findings", (DRIFT_FINDINGS,), read)


def lag_probe(lag: ConsumerLag) -> Probe:
    """The lag of the groups `lag` reads; raises (no samples) while the broker is away."""

    async def read() -> Reading:
        groups = await lag.read()
        samples: Samples = {
            (group.group, partition.topic, str(partition.partition)): float(partition.lag)
            for group in groups
            for partition in group.partitions
        }
        return {CONSUMER_LAG.name: samples}

    return Probe("consumer lag", (CONSUMER_LAG,), read, lag.close)
