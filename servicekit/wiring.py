"""The eventing machinery every service runs beside its gRPC API, wired in one place.

A service names what is its own: the topics it reads and its reactions to them, its timer
handlers and recurring jobs, and how its timers are bounded. Everything else is the same
in every service and is built here: the producer link shared by relay and inbox (for
dead-letter copies), the inbox and its Kafka consumer, the outbox relay, the recurring
jobs (outbox, inbox and timer pruning among them) and the timer runner, and the four
supervised workers that run them; and the service's metrics over the same tables, to which
a service adds only its drift source and its own gauges. Nothing connects here; the
workers do, once started.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import kafka
from servicekit.consumer import InboxConsumer
from servicekit.inbox import EventHandler, Inbox
from servicekit.incidents import Incidents
from servicekit.lag import ConsumerLag, LagSettings
from servicekit.metrics.sampling import Probe
from servicekit.metrics.service import ServiceMetrics, service_metrics
from servicekit.operations.hooks import DriftSource
from servicekit.outbox import Outbox
from servicekit.recurring import Recurring, RecurringJob
from servicekit.relay import OutboxRelay
from servicekit.retention import pruning_job
from servicekit.retry import RetryPolicy
from servicekit.runtime import ServiceRuntime
from servicekit.schema import EventingTables
from servicekit.supervision import Worker
from servicekit.timers import OutboundJob, TimerHandler, TimerRunner, Timers
from servicekit.unit_of_work import Effects


def effects_of(service: str, tables: EventingTables, topic: str) -> Effects:
    """Where the service's units of work put events (its outbox, for `topic`) and timers."""
    return Effects(Outbox(tables.outbox, producer=service), Timers(tables.timers), topic)


@dataclass(frozen=True)
class Consumes:
    """What the service reads from Kafka, as which consumer group, and how it reacts."""

    group: str
    topics: Sequence[str]
    handlers: Mapping[str, EventHandler]


@dataclass(frozen=True)
class TimerWork:
    """The service's durable timers: in-transaction handlers, outbound jobs that call a
    provider outside any transaction, recurring jobs, and the runner's bounds."""

    handlers: Mapping[str, TimerHandler] = field(default_factory=dict)
    outbound: Mapping[str, OutboundJob] = field(default_factory=dict)
    recurring: Sequence[RecurringJob] = ()
    policy: RetryPolicy | None = None  # None: the runner's own
    batch_size: int = 50
    lease_s: float = 30.0  # long enough for the slowest job's provider calls
    # The id a kind's aggregate is ("payment_id"), bound to the job's log lines.
    subjects: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Eventing:
    producer: kafka.ProducerLink
    inbox: Inbox
    consumer: InboxConsumer
    relay: OutboxRelay
    recurring: Recurring
    timer_runner: TimerRunner
    sessions: async_sessionmaker[AsyncSession]
    tables: EventingTables
    lag: ConsumerLag  # the lag of the service's own consumer group

    def metrics(
        self, address: str, drift: DriftSource, own: Sequence[Probe] = ()
    ) -> ServiceMetrics:
        """The service's metrics, served at `address`: every service's gauges over these
        tables, its drift source's findings and its own group's lag, and `own`."""
        return service_metrics(address, self.sessions, self.tables, self.lag, drift, own)

    def workers(self) -> list[Worker]:
        """The supervised workers of every service (a service may add its own)."""
        return [
            Worker("relay", self.relay.run),
            Worker("consumer", self.consumer.run),
            Worker("timers", self.timer_runner.run),
            Worker("recurring jobs", self.recurring.keep),
        ]


def eventing(
    service: str,
    kafka_bootstrap: str,
    sessions: async_sessionmaker[AsyncSession],
    tables: EventingTables,
    consumes: Consumes,
    timers: TimerWork | None = None,
) -> Eventing:
    work = timers or TimerWork()
    producer = kafka.ProducerLink(lambda: kafka.make_producer(kafka_bootstrap, service), service)
    inbox = Inbox(service, sessions, tables.inbox, consumes.handlers, producer)
    topics = list(consumes.topics)
    consumer = InboxConsumer(
        lambda: kafka.make_consumer(kafka_bootstrap, consumes.group, topics), inbox
    )
    recurring = Recurring(sessions, Timers(tables.timers), [*work.recurring, pruning_job(tables)])
    timer_runner = TimerRunner(
        sessions,
        tables.timers,
        {**work.handlers, **recurring.handlers()},
        policy=work.policy,
        batch_size=work.batch_size,
        outbound=work.outbound,
        incidents=Incidents(tables.incidents),
        lease_s=work.lease_s,
        subjects=work.subjects,
    )
    relay = OutboxRelay(sessions, tables.outbox, producer)
    lag = ConsumerLag(
        LagSettings(kafka_bootstrap, "", (consumes.group,), client_id=f"{service}-lag")
    )
    return Eventing(
        producer, inbox, consumer, relay, recurring, timer_runner, sessions, tables, lag
    )


class ServiceApp:
    """The face every service's bootstrap() returns: its runtime started, served and stopped
    the same way. A service adds only the provider clients to close once its workers have
    stopped."""

    runtime: ServiceRuntime  # a field of each service's app

    @property
    def grpc_port(self) -> int:
        return self.runtime.grpc_port

    async def start(self) -> None:
        await self.runtime.start()

    async def stop(self) -> None:
        try:
            await self.runtime.stop()
        finally:
            await self.closing()

    async def serve_until_stopped(self) -> None:
        try:
            await self.runtime.serve_until_stopped()
        finally:
            await self.closing()

    async def closing(self) -> None:
        """What to close after the runtime stopped; nothing by default."""
