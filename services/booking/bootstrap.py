"""The one place that builds the booking service's engine, sessions, Kafka clients,
relay, inbox, timer runner and gRPC servicer. Nothing connects before start()."""

from __future__ import annotations

from dataclasses import dataclass

from liftfit.booking.v1 import booking_pb2

from servicekit.consumer import InboxConsumer
from servicekit.db import make_engine, make_session_factory
from servicekit.idempotency_keys import IdempotencyKeys
from servicekit.inbox import Inbox
from servicekit.incidents import Incidents
from servicekit.kafka import ProducerLink, make_consumer, make_producer
from servicekit.outbox import Outbox
from servicekit.recurring import Recurring
from servicekit.relay import OutboxRelay
from servicekit.retention import pruning_job
from servicekit.runtime import ServiceRuntime
from servicekit.supervision import Worker
from servicekit.timers import TimerRunner, Timers
from servicekit.unit_of_work import Effects
from services.booking.adapters import orm
from services.booking.entrypoints.consumer import event_handlers
from services.booking.entrypoints.grpc_api import BookingServicer, registration
from services.booking.entrypoints.timers import timer_handlers
from services.booking.service_layer.unit_of_work import (
    Policy,
    UnitOfWorkFactory,
    unit_of_work_factory,
)
from services.booking.settings import Settings

SERVICE = "booking"
ERROR_DOMAIN = "liftfit.booking"  # the ErrorInfo domain of this service's refusals
SERVICE_NAME = booking_pb2.DESCRIPTOR.services_by_name["BookingService"].full_name


@dataclass
class BookingApp:
    settings: Settings
    runtime: ServiceRuntime
    uows: UnitOfWorkFactory
    inbox: Inbox
    timer_runner: TimerRunner
    relay: OutboxRelay

    async def start(self) -> None:
        await self.runtime.start()

    async def stop(self) -> None:
        await self.runtime.stop()

    @property
    def grpc_port(self) -> int:
        return self.runtime.grpc_port

    @property
    def grpc_target(self) -> str:
        host = self.settings.grpc_address.rsplit(":", 1)[0]
        return f"{host}:{self.grpc_port}"


def bootstrap(settings: Settings) -> BookingApp:
    """Wires the service; call it inside the event loop that will run it."""
    engine = make_engine(settings.database_url, pool_size=settings.db_pool_size)
    sessions = make_session_factory(engine)
    policy = Policy(settings.hold_seconds, settings.terms_version)
    keys = IdempotencyKeys(orm.eventing.idempotency_keys, settings.idempotency_secret)
    timers = Timers(orm.eventing.timers)
    effects = Effects(
        Outbox(orm.eventing.outbox, producer=SERVICE), timers, settings.topic("booking.events")
    )
    uows = unit_of_work_factory(sessions, effects, policy, keys)
    producer = ProducerLink(lambda: make_producer(settings.kafka_bootstrap, SERVICE), SERVICE)
    inbox = Inbox(SERVICE, sessions, orm.eventing.inbox, event_handlers(uows), producer)
    topics = [settings.topic("payment.events"), settings.topic("access.events")]
    consumer = InboxConsumer(
        lambda: make_consumer(settings.kafka_bootstrap, settings.topic(SERVICE), topics), inbox
    )
    relay = OutboxRelay(sessions, orm.eventing.outbox, producer)
    recurring = Recurring(sessions, timers, [pruning_job(orm.eventing)])
    timer_runner = TimerRunner(
        sessions,
        orm.eventing.timers,
        {**timer_handlers(uows), **recurring.handlers()},
        incidents=Incidents(orm.eventing.incidents),
    )
    runtime = ServiceRuntime(
        name=SERVICE,
        engine=engine,
        grpc_address=settings.grpc_address,
        registrations=[registration(BookingServicer(uows))],
        service_names=[SERVICE_NAME],
        producer=producer,
        error_domain=ERROR_DOMAIN,
        workers=[
            Worker("relay", relay.run),
            Worker("consumer", consumer.run),
            Worker("timers", timer_runner.run),
            Worker("recurring jobs", recurring.keep),
        ],
    )
    return BookingApp(settings, runtime, uows, inbox, timer_runner, relay)
