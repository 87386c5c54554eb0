"""The one place that builds the notify service's engine, Kafka clients, mail server
client, access client and workers. Nothing connects here: `NotifyApp.start()` does."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from liftfit.notify.v1 import notify_pb2

from servicekit import db
from servicekit.inbox import Inbox
from servicekit.operations.servicer import operator_api
from servicekit.recurring import Recurring
from servicekit.retry import RetryPolicy
from servicekit.runtime import ServiceRuntime
from servicekit.timers import TimerRunner
from servicekit.wiring import Consumes, ServiceApp, TimerWork, effects_of, eventing
from services.notify.adapters import operator_view, orm
from services.notify.adapters.access_pins import AccessPins, GrpcAccessPins
from services.notify.adapters.mail_lookup import HttpMailLookup, MailLookup
from services.notify.adapters.mail_metrics import mails_probe
from services.notify.adapters.mail_server import MailServer, SmtpMailServer
from services.notify.adapters.mail_templates import MailTemplates
from services.notify.entrypoints.consumer import event_handlers
from services.notify.entrypoints.grpc_api import NotifyServicer, registration
from services.notify.service_layer import jobs
from services.notify.service_layer.dependencies import NotifyDeps
from services.notify.service_layer.jobs import JobPolicy
from services.notify.service_layer.recovering import recover_delivery
from services.notify.service_layer.sending import send_delivery
from services.notify.service_layer.unit_of_work import Policy, unit_of_work_factory
from services.notify.settings import Settings

SERVICE = "notify"
ERROR_DOMAIN = "liftfit.notify"  # the ErrorInfo domain of this service's refusals
SERVICE_NAME = notify_pb2.DESCRIPTOR.services_by_name["NotifyService"].full_name
CONSUMED = ("booking.events", "payment.events", "access.events")


@dataclass
class NotifyApp(ServiceApp):
    settings: Settings
    runtime: ServiceRuntime
    deps: NotifyDeps
    inbox: Inbox
    timer_runner: TimerRunner
    recurring: Recurring

    async def closing(self) -> None:
        await self.deps.pins.aclose()
        if self.deps.mail_lookup is not None:
            await self.deps.mail_lookup.aclose()


def bootstrap(
    settings: Settings,
    mail_server: MailServer | None = None,
    pins: AccessPins | None = None,
    mail_lookup: MailLookup | None = None,
) -> NotifyApp:
    """Wires the service; a test may put another mail server, access service or provider
    lookup behind it."""
    engine = db.make_engine(settings.database_url)
    sessions = db.make_session_factory(engine)
    effects = effects_of(SERVICE, orm.eventing, settings.topic("notify.events"))
    policy = Policy(settings.default_timezone, dict(settings.space_timezones))
    uows = unit_of_work_factory(sessions, effects, policy)
    deps = NotifyDeps(
        uows,
        mail_server
        or SmtpMailServer(
            settings.smtp_host, settings.smtp_port, settings.mail_from, settings.smtp_timeout_s
        ),
        pins
        or GrpcAccessPins(settings.access_address, settings.tls_dir, settings.access_timeout_s),
        MailTemplates(),
        job_policy(settings, has_lookup=bool(mail_lookup or settings.mail_lookup_url)),
        mail_lookup or _http_lookup(settings),
    )
    reads = Consumes(
        group=settings.topic(SERVICE),
        topics=[settings.topic(name) for name in CONSUMED],
        handlers=event_handlers(uows),
    )
    timers = TimerWork(
        outbound={
            jobs.SEND: partial(send_delivery, deps),
            jobs.RECOVER: partial(recover_delivery, deps),
        },
        # A send that raises instead of answering is bounded like one the server refuses.
        policy=deps.policy.retries,
        # A send reads a PIN and talks SMTP, a recovery asks the lookup, each bounded by its
        # time-out.
        lease_s=max(
            30.0,
            4 * (settings.smtp_timeout_s + settings.access_timeout_s),
            4 * settings.mail_lookup_timeout_s,
        ),
    )
    parts = eventing(SERVICE, settings.kafka_bootstrap, sessions, orm.eventing, reads, timers)
    operators = operator_api(
        SERVICE,
        sessions,
        orm.eventing,
        operator_view.describe_booking,
        operator_view.drift_findings,
    )
    runtime = ServiceRuntime(
        name=SERVICE,
        engine=engine,
        endpoint=settings.endpoint,
        registrations=[registration(NotifyServicer(uows)), operators.registration],
        service_names=[SERVICE_NAME, operators.service_name],
        producer=parts.producer,
        error_domain=ERROR_DOMAIN,
        error_domains=operators.error_domains,
        workers=parts.workers(),
        metrics=parts.metrics(
            settings.metrics_address, operator_view.drift_findings, own=[mails_probe(sessions)]
        ),
    )
    return NotifyApp(settings, runtime, deps, parts.inbox, parts.timer_runner, parts.recurring)


def job_policy(settings: Settings, has_lookup: bool) -> JobPolicy:
    """Sends and lookups are spaced alike; each has its own bound on tries."""

    def tries(most: int) -> RetryPolicy:
        return RetryPolicy(most, settings.send_retry_base_s, settings.send_retry_max_s)

    lookups = tries(settings.lookup_max_tries) if has_lookup else None
    return JobPolicy(tries(settings.send_max_tries), lookups)


def _http_lookup(settings: Settings) -> MailLookup | None:
    if not settings.mail_lookup_url:
        return None
    return HttpMailLookup(settings.mail_lookup_url, settings.mail_lookup_timeout_s)
