"""The one place that builds the access service's engine, Kafka clients, lock provider
client, PIN vault and workers. Nothing connects here: `AccessApp.start()` does."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from liftfit.access.v1 import access_pb2

from servicekit import db
from servicekit.inbox import Inbox
from servicekit.operations.servicer import operator_api
from servicekit.provider_http import make_client
from servicekit.recurring import Recurring
from servicekit.retry import RetryPolicy
from servicekit.runtime import ServiceRuntime
from servicekit.timers import TimerRunner
from servicekit.wiring import Consumes, ServiceApp, TimerWork, effects_of, eventing
from services.access.adapters import operator_view, orm
from services.access.adapters.lock_provider import HttpLockProvider, LockProvider
from services.access.adapters.pin_vault import PinVault
from services.access.entrypoints.consumer import event_handlers
from services.access.entrypoints.grpc_api import AccessServicer, registration
from services.access.entrypoints.timers import timer_handlers
from services.access.service_layer.dependencies import AccessDeps
from services.access.service_layer.jobs import END_OF_WINDOW, JobPolicy
from services.access.service_layer.timer_handlers import outbound_jobs, recurring_jobs
from services.access.service_layer.unit_of_work import Devices, Policy, unit_of_work_factory
from services.access.settings import Settings

SERVICE = "access"
ERROR_DOMAIN = "liftfit.access"  # the ErrorInfo domain of this service's refusals
SERVICE_NAME = access_pb2.DESCRIPTOR.services_by_name["AccessService"].full_name


@dataclass
class AccessApp(ServiceApp):
    settings: Settings
    runtime: ServiceRuntime
    deps: AccessDeps
    inbox: Inbox
    timer_runner: TimerRunner
    recurring: Recurring

    async def closing(self) -> None:
        await self.deps.provider.aclose()


def bootstrap(settings: Settings, provider: LockProvider | None = None) -> AccessApp:
    """Wires the service; `provider` lets a test put another lock provider behind it."""
    engine = db.make_engine(settings.database_url)
    sessions = db.make_session_factory(engine)
    effects = effects_of(SERVICE, orm.eventing, settings.topic("access.events"))
    policy = Policy(
        Devices(settings.default_device, dict(settings.space_devices)),
        timedelta(seconds=settings.activation_lead_s),
        settings.alias_prefix,
    )
    uows = unit_of_work_factory(sessions, effects, policy, PinVault(settings.pin_keys))
    deps = AccessDeps(uows, provider or _http_provider(settings), _job_policy(settings))
    reads = Consumes(
        group=settings.topic(SERVICE),
        topics=[settings.topic("booking.events")],
        handlers=event_handlers(uows),
    )
    timers = TimerWork(
        handlers=timer_handlers(uows),
        outbound=outbound_jobs(deps),
        recurring=recurring_jobs(deps),
        # A job that raises instead of answering is bounded like one the provider ignores.
        policy=deps.policy.retries,
        # An activation makes up to three calls, each bounded at twice the time-out.
        lease_s=max(30.0, 8 * settings.lock_provider_timeout_s),
        # Activations and removals carry their grant in what they expect.
        subjects={END_OF_WINDOW: "grant_id"},
    )
    parts = eventing(SERVICE, settings.kafka_bootstrap, sessions, orm.eventing, reads, timers)
    operators = operator_api(
        SERVICE,
        sessions,
        orm.eventing,
        operator_view.describe_booking,
        operator_view.drift_findings,
        operator_view.booking_states,
    )
    runtime = ServiceRuntime(
        name=SERVICE,
        engine=engine,
        endpoint=settings.endpoint,
        registrations=[registration(AccessServicer(uows)), operators.registration],
        service_names=[SERVICE_NAME, operators.service_name],
        producer=parts.producer,
        error_domain=ERROR_DOMAIN,
        error_domains=operators.error_domains,
        workers=parts.workers(),
        metrics=parts.metrics(settings.metrics_address, operator_view.drift_findings),
    )
    return AccessApp(settings, runtime, deps, parts.inbox, parts.timer_runner, parts.recurring)


def _http_provider(settings: Settings) -> HttpLockProvider:
    client = make_client(
        settings.lock_provider_url,
        settings.lock_provider_api_key,
        settings.lock_provider_timeout_s,
    )
    return HttpLockProvider(client)


def _job_policy(settings: Settings) -> JobPolicy:
    return JobPolicy(
        retries=RetryPolicy(settings.provider_max_tries, settings.provider_retry_base_s, 30.0),
        drift_every_s=settings.drift_every_s,
        reseal_every_s=settings.reseal_every_s,
        activation_grace_s=settings.activation_grace_s,
        revocation_overdue_s=settings.revocation_overdue_s,
    )
