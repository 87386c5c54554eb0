"""The only place that builds engines, Kafka clients, the gateway client and the workers.

Nothing connects at import time or here: building is cheap, `PaymentApp.start()` connects.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import db
from servicekit.idempotency_keys import IdempotencyKeys
from servicekit.inbox import Inbox
from servicekit.operations.servicer import operator_api
from servicekit.provider_http import make_client
from servicekit.retry import RetryPolicy
from servicekit.runtime import ServiceRuntime
from servicekit.supervision import Worker
from servicekit.timers import TimerRunner
from servicekit.wiring import Consumes, ServiceApp, TimerWork, effects_of, eventing
from services.payment.adapters.card_gateway import CardGateway, HttpCardGateway
from services.payment.adapters.operator_view import PaymentOperatorView
from services.payment.adapters.orm import Tables, build_tables
from services.payment.entrypoints import grpc_api
from services.payment.entrypoints.consumer import booking_event_handlers
from services.payment.entrypoints.hint_retrier import reapply_hints
from services.payment.service_layer.dependencies import PaymentDeps
from services.payment.service_layer.jobs import JobPolicy
from services.payment.service_layer.timer_handlers import outbound_jobs, recurring_jobs
from services.payment.service_layer.unit_of_work import unit_of_work_factory
from services.payment.settings import Settings

SERVICE = "payment"
ERROR_DOMAIN = "liftfit.payment"  # the ErrorInfo domain of this service's refusals


@dataclass
class PaymentApp(ServiceApp):
    settings: Settings
    runtime: ServiceRuntime
    deps: PaymentDeps
    tables: Tables
    sessions: async_sessionmaker[AsyncSession]
    timer_runner: TimerRunner
    inbox: Inbox

    async def closing(self) -> None:
        await self.deps.gateway.aclose()


def bootstrap(settings: Settings, gateway: CardGateway | None = None) -> PaymentApp:
    """Wires the service; `gateway` lets a test put a fake provider behind the real service."""
    tables = build_tables()
    engine = db.make_engine(settings.database_url)
    sessions = db.make_session_factory(engine)
    effects = effects_of(SERVICE, tables.eventing, settings.payment_events_topic)
    keys = IdempotencyKeys(tables.eventing.idempotency_keys, settings.idempotency_secret)
    deps = PaymentDeps(
        uows=unit_of_work_factory(sessions, tables, effects, keys),
        gateway=gateway or _http_gateway(settings),
        policy=_job_policy(settings),
        webhook_secrets=settings.webhook_secrets,
        return_url=settings.return_url,
    )
    reads = Consumes(
        group=settings.consumer_group,
        topics=[settings.booking_events_topic],
        handlers=booking_event_handlers(deps),
    )
    outbound = outbound_jobs(deps)
    timers = TimerWork(
        outbound=outbound,
        recurring=recurring_jobs(deps),
        # A job that raises instead of answering is bounded like one the gateway never answers.
        policy=RetryPolicy(
            max_attempts=settings.gateway_max_tries, base_delay_s=settings.gateway_retry_base_s
        ),
        batch_size=10,
        # A job holds its lease through its gateway call, bounded at twice the time-out.
        lease_s=max(30.0, 4 * settings.gateway_timeout_s),
        subjects=dict.fromkeys(outbound, "payment_id"),  # every gateway job is a payment's
    )
    parts = eventing(SERVICE, settings.kafka_bootstrap, sessions, tables.eventing, reads, timers)
    workers = [*parts.workers(), Worker("hint retrier", partial(reapply_hints, deps))]
    view = PaymentOperatorView(tables)
    operators = operator_api(
        SERVICE,
        sessions,
        tables.eventing,
        view.describe_booking,
        view.drift_findings,
        view.booking_states,
    )
    runtime = ServiceRuntime(
        name=SERVICE,
        engine=engine,
        endpoint=settings.endpoint,
        registrations=[grpc_api.registration(deps), operators.registration],
        service_names=[grpc_api.SERVICE_NAME, operators.service_name],
        producer=parts.producer,
        error_domain=ERROR_DOMAIN,
        error_domains=operators.error_domains,
        workers=workers,
        metrics=parts.metrics(settings.metrics_address, view.drift_findings),
    )
    return PaymentApp(settings, runtime, deps, tables, sessions, parts.timer_runner, parts.inbox)


def _http_gateway(settings: Settings) -> HttpCardGateway:
    client = make_client(
        settings.card_gateway_url, settings.card_gateway_api_key, settings.gateway_timeout_s
    )
    return HttpCardGateway(client)


def _job_policy(settings: Settings) -> JobPolicy:
    return JobPolicy(
        retry_base_s=settings.gateway_retry_base_s,
        max_tries=settings.gateway_max_tries,
        reconcile_after_s=settings.reconcile_after_s,
        reconcile_every_s=settings.reconcile_every_s,
    )
