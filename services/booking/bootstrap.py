"""The one place that builds the booking service's engine, sessions, Kafka clients,
relay, inbox, timer runner and gRPC servicer. Nothing connects before start()."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from liftfit.booking.v1 import booking_pb2

from servicekit.db import make_engine, make_session_factory
from servicekit.idempotency_keys import IdempotencyKeys
from servicekit.inbox import Inbox
from servicekit.operations.servicer import operator_api
from servicekit.relay import OutboxRelay
from servicekit.runtime import ServiceRuntime
from servicekit.timers import TimerRunner
from servicekit.wiring import Consumes, ServiceApp, TimerWork, effects_of, eventing
from services.booking.adapters import operator_view, orm
from services.booking.entrypoints.consumer import event_handlers
from services.booking.entrypoints.grpc_api import BookingServicer, registration
from services.booking.entrypoints.timers import timer_handlers
from services.booking.service_layer.unit_of_work import (
    RELEASE_UNPAID_HOLD,
    Policy,
    UnitOfWorkFactory,
    unit_of_work_factory,
)
from services.booking.settings import Settings

SERVICE = "booking"
ERROR_DOMAIN = "liftfit.booking"  # the ErrorInfo domain of this service's refusals
SERVICE_NAME = booking_pb2.DESCRIPTOR.services_by_name["BookingService"].full_name


@dataclass
class BookingApp(ServiceApp):
    settings: Settings
    runtime: ServiceRuntime
    uows: UnitOfWorkFactory
    inbox: Inbox
    timer_runner: TimerRunner
    relay: OutboxRelay

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
    effects = effects_of(SERVICE, orm.eventing, settings.topic("booking.events"))
    uows = unit_of_work_factory(sessions, effects, policy, keys)
    reads = Consumes(
        group=settings.topic(SERVICE),
        topics=[settings.topic("payment.events"), settings.topic("access.events")],
        handlers=event_handlers(uows),
    )
    parts = eventing(
        SERVICE,
        settings.kafka_bootstrap,
        sessions,
        orm.eventing,
        reads,
        TimerWork(handlers=timer_handlers(uows), subjects={RELEASE_UNPAID_HOLD: "booking_id"}),
    )
    drift = operator_view.BookingDrift(timedelta(seconds=settings.drift_no_payment_after_s))
    operators = operator_api(
        SERVICE,
        sessions,
        orm.eventing,
        operator_view.describe_booking,
        drift,
        operator_view.booking_states,
    )
    runtime = ServiceRuntime(
        name=SERVICE,
        engine=engine,
        endpoint=settings.endpoint,
        registrations=[registration(BookingServicer(uows)), operators.registration],
        service_names=[SERVICE_NAME, operators.service_name],
        producer=parts.producer,
        error_domain=ERROR_DOMAIN,
        error_domains=operators.error_domains,
        workers=parts.workers(),
        metrics=parts.metrics(settings.metrics_address, drift),
    )
    return BookingApp(settings, runtime, uows, parts.inbox, parts.timer_runner, parts.relay)
