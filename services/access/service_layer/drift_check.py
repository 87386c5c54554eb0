"""The drift check: the grants here against the codes the lock provider holds.

A recurring job books one run at a time (`DRIFT_RUN`, an outbound job): it reads the
active grants, asks the provider for every live code (and for each active grant's code
the listing lacks, asks again for that code alone), then decides and repairs in one
transaction that re-reads every grant it touches, so a grant that moved on between the
reads is judged as it is now. Repairs are bounded per run and idempotent: each is a job
that carries the state it expects, scheduled only when none is pending. Every finding is
stored (listable by operators) and cleared by the first run that no longer sees it.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from services.access.domain import drift
from services.access.domain.drift import Finding, Owned, Repair
from services.access.domain.model import (
    CodeToRemove,
    GrantState,
    ProvisionState,
    RemoteCode,
    provision_of_alias,
)
from services.access.service_layer import grants, jobs
from services.access.service_layer.dependencies import AccessDeps
from services.access.service_layer.unit_of_work import UnitOfWork

log = logging.getLogger(__name__)
BATCH = 500  # grants of each kind judged per run
MAX_REPAIRS = 100  # repairs per run; the rest wait for the next run


async def run_drift_check(deps: AccessDeps) -> list[Finding]:
    """One run; returns what it found (the findings are stored too)."""
    async with deps.uows.transaction() as uow:
        active = await uow.provisions.active_with_codes(BATCH)
    remote = await deps.provider.list_codes()
    listed = {code.provider_code_id for code in remote}
    vanished = set()
    for _, provision in active:
        code_id = provision.provider_code_id
        if code_id and code_id not in listed and await deps.provider.get_code(code_id) is None:
            vanished.add(code_id)
    async with deps.uows.transaction() as uow:
        found = await _judge(uow, deps, remote, vanished)
        repaired = 0
        for finding in found:
            if finding.repair is not Repair.NONE and repaired < MAX_REPAIRS:
                repaired += await _repair(uow, finding)
            await uow.findings.note(finding)
        await uow.findings.clear_unseen({(f.kind.value, f.subject_id) for f in found})
    for finding in found:
        log.warning(
            "drift %s %s: %s; %s",
            finding.kind,
            finding.subject_id,
            finding.problem,
            finding.repair_text,
        )
    return found


async def _judge(
    uow: UnitOfWork, deps: AccessDeps, remote: list[RemoteCode], vanished: set[str]
) -> list[Finding]:
    now, policy = datetime.now(UTC), deps.policy
    found: list[Finding] = []
    prefix = uow.policy.alias_prefix
    ours = {code: provision_of_alias(prefix, code.name) for code in remote}
    named = [provision_id for provision_id in ours.values() if provision_id]
    owned = {p.provision_id: Owned(g, p) for g, p in await uow.provisions.with_grants(named)}
    for code, provision_id in ours.items():
        if provision_id is not None:
            found += _some(drift.stray_code(code, owned.get(provision_id)))
    for grant, provision in await uow.provisions.active_with_codes(BATCH):
        if provision.provider_code_id in vanished:
            found += _some(drift.missing_code(Owned(grant, provision), set(), now))
    grace = timedelta(seconds=policy.activation_grace_s)
    for grant in await uow.grants.in_state(GrantState.PLANNED, BATCH):
        pending = await uow.has_pending(jobs.ACTIVATE, grant.provision_id)
        lead = uow.policy.activation_lead
        found += _some(drift.missed_activation(grant, pending, now, lead, grace))
    overdue = timedelta(seconds=policy.revocation_overdue_s)
    for grant in await uow.grants.in_state(GrantState.REVOKE_PENDING, BATCH, now - overdue):
        pending = await _removal_pending(uow, grant.grant_id)
        found += _some(drift.overdue_revocation(grant, pending, now, overdue))
    return found


def _some(finding: Finding | None) -> list[Finding]:
    return [finding] if finding is not None else []


async def _removal_pending(uow: UnitOfWork, grant_id: str) -> bool:
    for provision in await uow.provisions.of_grant(grant_id):
        code_id = provision.provider_code_id
        if code_id and await uow.has_pending(jobs.REMOVE_CODE, code_id):
            return True
        if provision.state is ProvisionState.CREATING and await uow.has_pending(
            jobs.ACTIVATE, provision.provision_id
        ):
            return True
    return False


async def _repair(uow: UnitOfWork, finding: Finding) -> int:
    """Carries out a finding's safe repair; 1 when something was scheduled or changed."""
    grant = finding.grant
    if finding.repair is Repair.REMOVE_CODE and grant and finding.provision and finding.code:
        order = CodeToRemove(
            grant.grant_id,
            finding.provision.provision_id,
            finding.code.provider_code_id,
            grant.window,
        )
        await jobs.schedule_removal(uow, order)
        return 1
    if finding.repair is Repair.REPROVISION and grant and finding.provision:
        current = await uow.grants.get(grant.grant_id, lock=True)
        gone = await uow.provisions.get(finding.provision.provision_id, lock=True)
        if current is not None and gone is not None and current.provision_id == gone.provision_id:
            return int(await grants.reprovision(uow, current, gone))
        return 0
    if finding.repair is Repair.ACTIVATE and grant:
        await jobs.schedule_activation(uow, grant, due_at=datetime.now(UTC))
        return 1
    if finding.repair is Repair.REMOVE_AGAIN and grant:
        return await _remove_again(uow, grant.grant_id)
    return 0


async def _remove_again(uow: UnitOfWork, grant_id: str) -> int:
    grant = await uow.grants.get(grant_id)
    if grant is None or grant.state is not GrantState.REVOKE_PENDING:
        return 0
    scheduled = 0
    for provision in await uow.provisions.of_grant(grant_id):
        code_id = provision.provider_code_id
        if provision.state is ProvisionState.REMOVING and code_id:
            order = CodeToRemove(grant.grant_id, provision.provision_id, code_id, grant.window)
            await jobs.schedule_removal(uow, order)
            scheduled += 1
        elif provision.state is ProvisionState.CREATING:
            # Its activation found the grant ended; let it look the alias up again.
            now = datetime.now(UTC)
            await jobs.schedule_activation(uow, grant, provision.provision_id, due_at=now)
            scheduled += 1
    return scheduled
