"""What the handlers and jobs need, built once by bootstrap()."""

from __future__ import annotations

from dataclasses import dataclass

from services.notify.adapters.access_pins import AccessPins
from services.notify.adapters.mail_lookup import MailLookup
from services.notify.adapters.mail_server import MailServer
from services.notify.adapters.mail_templates import MailTemplates
from services.notify.service_layer.jobs import JobPolicy
from services.notify.service_layer.unit_of_work import UnitOfWorkFactory


@dataclass(frozen=True)
class NotifyDeps:
    uows: UnitOfWorkFactory
    mail_server: MailServer
    pins: AccessPins
    templates: MailTemplates
    policy: JobPolicy
    mail_lookup: MailLookup | None = None  # the provider's log; None: plain SMTP
