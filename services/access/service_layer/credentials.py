"""The jobs that create and remove codes at the lock provider.

No transaction, row lock or connection is held while the provider is called. Each job
reads and checks what it expects in one short transaction and commits (an activation
marks its provision `creating` there, before the first call), calls the provider, then
applies the answer in a new transaction that locks the grant and the provision and
changes them only if they are still as the job expects.

Creation: the provider has no idempotency key, so each code is named with its
provision's alias, and what counts is what the alias shows, never the create's answer
alone. A try of a provision that may already have reached the provider looks the alias up
first; a try that finds nothing creates the code, then looks the alias up. Exactly one
live code is adopted (its PIN sealed, the grant active); none is tried again later;
several are a duplicate on the device: an incident, neither adopted, all removed. A code
that arrives for a grant that was cancelled or moved meanwhile is removed, never adopted.

Removal: a destructive job carries the grant, the provision, the provider's id of the
code and the window, and does nothing if the code is now the grant's live credential or
any of them changed; it also checks the code's name at the provider before deleting it.
Only the provider's word that the code is gone (removed, or no longer known) confirms it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from servicekit.timers import DueTimer
from services.access.adapters.lock_provider import ProviderRefused, ProviderUnavailable
from services.access.domain.model import (
    Activation,
    CodeToRemove,
    Grant,
    Lookup,
    Provision,
    ProvisionState,
    RemoteCode,
    judge_lookup,
)
from services.access.service_layer import grants, jobs, messages
from services.access.service_layer.dependencies import AccessDeps
from services.access.service_layer.unit_of_work import UnitOfWork

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Creation:
    """What one try of an activation does at the provider."""

    grant: Grant
    provision: Provision
    alias: str  # the code's name at the provider
    look_first: bool  # an earlier try may have reached the provider
    may_create: bool  # the grant still wants its code; else only what exists is removed


async def activate_credential(deps: AccessDeps, timer: DueTimer) -> None:
    order = Activation.of_json(timer.expected)
    async with deps.uows.transaction() as uow:
        creation = await _creation_to_try(uow, timer, order)
    if creation is None:
        return
    try:
        found = await _create_by_alias(deps, creation)
    except ProviderUnavailable as error:
        await _retry_or_report(deps, timer, "activation_unconfirmed", str(error))
    except ProviderRefused as error:
        await _creation_refused(deps, order, error)
    else:
        await _settle_creation(deps, timer, order, found)


async def _creation_to_try(uow: UnitOfWork, timer: DueTimer, order: Activation) -> Creation | None:
    grant = await uow.grants.get(order.grant_id, lock=True)
    provision = await uow.provisions.get(order.provision_id, lock=True)
    if grant is None or provision is None or provision.grant_id != grant.grant_id:
        return None
    if provision.state not in (ProvisionState.PENDING, ProvisionState.CREATING):
        return None  # settled by an earlier try
    alias = provision.alias(uow.policy.alias_prefix)
    if not grant.holds(provision.provision_id, order.window):
        if provision.state is ProvisionState.CREATING:
            return Creation(grant, provision, alias, look_first=True, may_create=False)
        provision.abandon()  # still pending: nothing was ever sent
        await uow.provisions.save(provision)
        await grants.settle_revocation(uow, grant)
        return None
    now, lead = datetime.now(UTC), uow.policy.activation_lead
    if now < order.window.activation_at(lead):
        # Early (a clock ahead of the database's): the same try, when the window opens.
        due = order.window.activation_at(lead)
        await uow.schedule(timer.kind, timer.aggregate_id, timer.expected, due_at=due)
        return None
    if not order.window.allows_activation(now, lead):
        return None  # the window is over: its end-of-window job revokes the grant
    look_first = provision.state is ProvisionState.CREATING
    if provision.start_creating():
        await uow.provisions.save(provision)  # committed before the first call
    return Creation(grant, provision, alias, look_first, may_create=True)


async def _create_by_alias(deps: AccessDeps, creation: Creation) -> list[RemoteCode]:
    provision, window, name = creation.provision, creation.grant.window, creation.alias
    if creation.look_first:
        found = await deps.provider.list_codes(provision.device_id, name)
        if judge_lookup(found) is not Lookup.NONE or not creation.may_create:
            return found
    try:
        await deps.provider.create_code(
            provision.device_id, name, window.valid_from, window.valid_to
        )
    except ProviderUnavailable as error:
        # Perhaps applied, perhaps not: the alias tells.
        log.info("provision %s: create unconfirmed (%s); looking it up", name, error)
    return await deps.provider.list_codes(provision.device_id, name)


async def _settle_creation(
    deps: AccessDeps, timer: DueTimer, order: Activation, found: list[RemoteCode]
) -> None:
    async with deps.uows.transaction() as uow:
        grant = await uow.grants.get(order.grant_id, lock=True)
        provision = await uow.provisions.get(order.provision_id, lock=True)
        if grant is None or provision is None or provision.state is not ProvisionState.CREATING:
            return
        live = [code for code in found if code.is_live]
        verdict = judge_lookup(found)
        wanted = grant.holds(provision.provision_id, order.window)
        if verdict is Lookup.NONE:
            if wanted:
                detail = "no code under its alias"
                await _retry_in_uow(uow, deps, timer, "activation_unconfirmed", detail)
            else:
                provision.abandon()
                await uow.provisions.save(provision)
                await grants.settle_revocation(uow, grant)
        elif verdict is Lookup.ONE and wanted:
            await _adopt(uow, grant, provision, live[0])
        elif verdict is Lookup.ONE:
            await _remove_orphan(uow, grant, provision, live[0])
        else:
            await _reject_duplicates(uow, grant, provision, live)


async def _adopt(uow: UnitOfWork, grant: Grant, provision: Provision, code: RemoteCode) -> None:
    provision.adopt(code.provider_code_id)
    await uow.provisions.save(provision)
    await uow.credentials.store(provision.provision_id, code.pin)
    grant.activate()
    await uow.grants.save(grant)
    await uow.publish(grant.booking_id, messages.access_activated(grant))


async def _remove_orphan(
    uow: UnitOfWork, grant: Grant, provision: Provision, code: RemoteCode
) -> None:
    """The booking was cancelled or moved while its code was being created."""
    log.info("grant %s ended while its code was created: removing it", grant.grant_id)
    provision.orphan(code.provider_code_id)
    await uow.provisions.save(provision)
    order = CodeToRemove(
        grant.grant_id, provision.provision_id, code.provider_code_id, grant.window
    )
    await jobs.schedule_removal(uow, order)


async def _reject_duplicates(
    uow: UnitOfWork, grant: Grant, provision: Provision, codes: list[RemoteCode]
) -> None:
    ids = ", ".join(code.provider_code_id for code in codes)
    log.error(
        "provision %s: %d codes under one alias (%s)", provision.provision_id, len(codes), ids
    )
    provision.mark(ProvisionState.DUPLICATED)
    await uow.provisions.save(provision)
    await uow.incidents.open(
        "duplicate_credential",
        provision.provision_id,
        f"grant {grant.grant_id}: {len(codes)} codes under one alias on {provision.device_id}"
        f" ({ids}); neither adopted, each removed; a human decides whether to provision again",
    )
    for code in codes:
        order = CodeToRemove(
            grant.grant_id, provision.provision_id, code.provider_code_id, grant.window
        )
        await jobs.schedule_removal(uow, order)
    if grant.fail("several codes under one alias at the provider"):
        await uow.grants.save(grant)
    else:
        await grants.settle_revocation(uow, grant)


async def _creation_refused(deps: AccessDeps, order: Activation, error: ProviderRefused) -> None:
    """A definite refusal: nothing was created under this try."""
    async with deps.uows.transaction() as uow:
        grant = await uow.grants.get(order.grant_id, lock=True)
        provision = await uow.provisions.get(order.provision_id, lock=True)
        if grant is None or provision is None or not provision.mark(ProvisionState.FAILED):
            return
        await uow.provisions.save(provision)
        await uow.incidents.open(
            "activation_refused",
            provision.provision_id,
            f"grant {grant.grant_id} on {provision.device_id}: the provider refused ({error})",
        )
        if grant.fail(f"the lock provider refused the code: {error.code}"):
            await uow.grants.save(grant)
        else:
            await grants.settle_revocation(uow, grant)


async def remove_code(deps: AccessDeps, timer: DueTimer) -> None:
    order = CodeToRemove.of_json(timer.expected)
    async with deps.uows.transaction() as uow:
        grant = await uow.grants.get(order.grant_id)
        provision = await uow.provisions.get(order.provision_id)
        alias = provision.alias(uow.policy.alias_prefix) if provision else ""
    if provision is None or not order.still_wanted_gone(grant, provision):
        log.info("removal of %s: what it expects changed; nothing done", order.provider_code_id)
        return
    try:
        code = await deps.provider.get_code(order.provider_code_id)
        if code is not None and code.name != alias:
            detail = f"code {order.provider_code_id} is named {code.name}, not {alias}"
            await _report(deps, "removal_not_ours", order.provider_code_id, detail)
            return
        if code is not None and not code.is_gone:
            code = await deps.provider.delete_code(order.provider_code_id)
    except ProviderUnavailable as error:
        await _retry_or_report(deps, timer, "revocation_unconfirmed", str(error))
        return
    except ProviderRefused as error:
        await _report(deps, "revocation_refused", order.provider_code_id, str(error))
        return
    if code is not None and not code.is_gone:  # still removing: ask again later
        await _retry_or_report(deps, timer, "revocation_unconfirmed", f"still {code.status}")
        return
    await _confirm_removed(deps, order)


async def _confirm_removed(deps: AccessDeps, order: CodeToRemove) -> None:
    async with deps.uows.transaction() as uow:
        grant = await uow.grants.get(order.grant_id, lock=True)
        provision = await uow.provisions.get(order.provision_id, lock=True)
        if grant is None or provision is None:
            return
        if provision.confirm_removed(order.provider_code_id):
            await uow.provisions.save(provision)
        await grants.settle_revocation(uow, grant)


async def _retry_or_report(deps: AccessDeps, timer: DueTimer, kind: str, detail: str) -> None:
    async with deps.uows.transaction() as uow:
        await _retry_in_uow(uow, deps, timer, kind, detail)


async def _retry_in_uow(
    uow: UnitOfWork, deps: AccessDeps, timer: DueTimer, kind: str, detail: str
) -> None:
    """The same job again later; its tries used up, an incident for an operator."""
    if not await uow.retry_later(timer, deps.policy.retries):
        await uow.incidents.open(kind, timer.aggregate_id, f"no answer after retries: {detail}")


async def _report(deps: AccessDeps, kind: str, subject_id: str, detail: str) -> None:
    async with deps.uows.transaction() as uow:
        await uow.incidents.open(kind, subject_id, detail)
