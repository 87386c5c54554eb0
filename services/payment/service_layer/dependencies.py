"""What the handlers need, built once by bootstrap()."""

from __future__ import annotations

from dataclasses import dataclass, field

from services.payment.adapters.card_gateway import CardGateway
from services.payment.service_layer.hints import HintsToReapply
from services.payment.service_layer.jobs import JobPolicy
from services.payment.service_layer.unit_of_work import UnitOfWorkFactory


@dataclass(frozen=True)
class PaymentDeps:
    uows: UnitOfWorkFactory
    gateway: CardGateway
    policy: JobPolicy
    webhook_secrets: tuple[str, ...]
    return_url: str = ""
    hints: HintsToReapply = field(default_factory=HintsToReapply)
