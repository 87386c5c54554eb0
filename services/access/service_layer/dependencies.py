"""What the handlers and jobs need, built once by bootstrap()."""

from __future__ import annotations

from dataclasses import dataclass

from services.access.adapters.lock_provider import LockProvider
from services.access.service_layer.jobs import JobPolicy
from services.access.service_layer.unit_of_work import UnitOfWorkFactory


@dataclass(frozen=True)
class AccessDeps:
    uows: UnitOfWorkFactory
    provider: LockProvider
    policy: JobPolicy
