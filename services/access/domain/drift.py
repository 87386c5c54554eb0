"""The drift check's judgement: local grants against the provider's codes, as findings.

Each finding says in words what is wrong, which side owns the truth, and the repair: a
safe one (bounded, idempotent, done by a job that carries the state it expects) or none,
with the reason a human must decide. Pure: the service layer reads both sides and applies
the repairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from services.access.domain.model import (
    Grant,
    GrantState,
    Provision,
    ProvisionState,
    RemoteCode,
)


class FindingKind(StrEnum):
    REMOTE_CODE_WITHOUT_GRANT = "remote_code_without_grant"
    ACTIVE_GRANT_CODE_MISSING = "active_grant_code_missing"
    MISSED_ACTIVATION = "missed_activation"
    REVOCATION_PENDING_TOO_LONG = "revocation_pending_too_long"


class Repair(StrEnum):
    REMOVE_CODE = "remove_code"  # a removal job carrying grant, provision, code and window
    REPROVISION = "reprovision"  # a new provision for the same grant and window
    ACTIVATE = "activate"  # the activation job, scheduled again
    REMOVE_AGAIN = "remove_again"  # the removal of the grant's codes, scheduled again
    NONE = "none"  # a human decides


@dataclass(frozen=True)
class Finding:
    kind: FindingKind
    subject_id: str
    problem: str
    truth: str
    repair: Repair
    repair_text: str
    grant: Grant | None = None
    provision: Provision | None = None
    code: RemoteCode | None = None

    @property
    def needs_human(self) -> bool:
        return self.repair is Repair.NONE


@dataclass(frozen=True)
class Owned:
    """A local provision and its grant, as the drift check read them."""

    grant: Grant
    provision: Provision


def stray_code(code: RemoteCode, owned: Owned | None) -> Finding | None:
    """A code under one of our aliases that no live grant holds."""
    if owned is None:
        return Finding(
            FindingKind.REMOTE_CODE_WITHOUT_GRANT,
            code.provider_code_id,
            f"code {code.provider_code_id} on {code.device_id} is named {code.name}, like ours,"
            " but no provision of that name is known here",
            "neither side alone: the grants decide who may enter, but a code without any"
            " record here may belong to a booking whose record was lost",
            Repair.NONE,
            "none: a human must decide whether to remove it, since removing it could lock"
            " out a customer whose booking is real",
            code=code,
        )
    grant, provision = owned.grant, owned.provision
    if provision.state is ProvisionState.CREATING:
        return None  # its activation job is deciding about it right now
    if provision.provider_code_id == code.provider_code_id and (
        grant.provision_id == provision.provision_id and grant.is_live
    ):
        return None  # the grant's own live credential
    if provision.state is ProvisionState.REMOVING and provision.provider_code_id == (
        code.provider_code_id
    ):
        return None  # its removal is under way; an overdue one is a finding of its own
    return Finding(
        FindingKind.REMOTE_CODE_WITHOUT_GRANT,
        code.provider_code_id,
        f"code {code.provider_code_id} on {code.device_id} ({code.name}) opens the door, but"
        f" grant {grant.grant_id} is {grant.state} and holds no such code",
        "the access service: only a live grant may have a code on the lock, and none has this one",
        Repair.REMOVE_CODE,
        "a removal job for this code, carrying its grant, provision and window; it does"
        " nothing if any of them changed",
        grant,
        provision,
        code,
    )


def missing_code(owned: Owned, remote_ids: set[str], now: datetime) -> Finding | None:
    """An active grant whose code the provider does not hold."""
    grant, provision = owned.grant, owned.provision
    if grant.state is not GrantState.ACTIVE or provision.state is not ProvisionState.CREATED:
        return None
    if provision.provider_code_id in remote_ids or now >= grant.window.valid_to:
        return None
    return Finding(
        FindingKind.ACTIVE_GRANT_CODE_MISSING,
        grant.grant_id,
        f"grant {grant.grant_id} is active, but its code {provision.provider_code_id} is not"
        f" on {grant.device_id}: its PIN opens nothing",
        "the lock provider: the lock holds only the codes the provider lists",
        Repair.REPROVISION,
        "a new provision for the same grant and window; the activation job creates its"
        " code, with a new PIN, which has to be disclosed again",
        grant,
        provision,
    )


def missed_activation(
    grant: Grant, activation_pending: bool, now: datetime, lead: timedelta, grace: timedelta
) -> Finding | None:
    """A planned grant past its activation time with no job left to activate it."""
    due = grant.window.activation_at(lead)
    if grant.state is not GrantState.PLANNED or activation_pending:
        return None
    if now < due + grace or now >= grant.window.valid_to:
        return None
    return Finding(
        FindingKind.MISSED_ACTIVATION,
        grant.grant_id,
        f"grant {grant.grant_id} should have been active since {due.isoformat()}, but it is"
        " still planned and no activation job is pending",
        "the access service: the booking is confirmed with this grant and window",
        Repair.ACTIVATE,
        "the activation job again, for the same provision; it looks the alias up before"
        " it creates anything",
        grant,
    )


def overdue_revocation(
    grant: Grant, removal_pending: bool, now: datetime, overdue: timedelta
) -> Finding | None:
    """A revocation the provider has not confirmed for too long; its slot stays closed."""
    since = grant.updated_at or now
    if grant.state is not GrantState.REVOKE_PENDING or now - since < overdue:
        return None
    if removal_pending:
        return Finding(
            FindingKind.REVOCATION_PENDING_TOO_LONG,
            grant.grant_id,
            f"grant {grant.grant_id} has waited for its code's removal since"
            f" {since.isoformat()}; its slot stays closed meanwhile",
            "the lock provider: only its confirmation proves the old PIN no longer opens",
            Repair.NONE,
            "none yet: a removal job is still trying; if its tries run out it opens an"
            " incident and a human decides",
            grant,
        )
    return Finding(
        FindingKind.REVOCATION_PENDING_TOO_LONG,
        grant.grant_id,
        f"grant {grant.grant_id} has waited for its code's removal since"
        f" {since.isoformat()}, and no removal job is pending; its slot stays closed",
        "the lock provider: only its confirmation proves the old PIN no longer opens",
        Repair.REMOVE_AGAIN,
        "the removal of each of its codes again, each job carrying the state it expects",
        grant,
    )
