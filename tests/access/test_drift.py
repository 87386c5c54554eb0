"""Each kind of drift between the grants and the provider's codes, made on purpose at the
provider or here, is found, explained and safely repaired; the next run finds nothing.
A code that needs a human is reported and left alone."""

from __future__ import annotations

import uuid

from services.access.domain.drift import Finding, FindingKind
from services.access.domain.model import GrantState, alias
from services.access.service_layer import jobs
from services.access.service_layer.drift_check import run_drift_check
from tests.access.conftest import HarnessFactory
from tests.access.harness import AccessHarness, Booking


async def _drift(access: AccessHarness) -> list[Finding]:
    return await run_drift_check(access.app.deps)


async def _active(access: AccessHarness) -> Booking:
    booking = await access.confirm()
    await access.run_jobs()
    assert (await access.grant(booking)).state is GrantState.ACTIVE
    return booking


def _only(found: list[Finding], kind: FindingKind) -> Finding:
    assert [f.kind for f in found] == [kind], found
    finding = found[0]
    assert finding.problem and finding.truth and finding.repair_text
    return finding


async def test_a_code_left_at_the_provider_for_a_revoked_grant_is_removed(
    access: AccessHarness,
) -> None:
    booking = await _active(access)
    grant = await access.grant(booking)
    await access.cancel(booking)
    await access.run_jobs()
    name = alias(access.app.settings.alias_prefix, grant.provision_id)
    stray = await access.add_code(name, booking.window)  # back at the provider somehow

    finding = _only(await _drift(access), FindingKind.REMOTE_CODE_WITHOUT_GRANT)
    assert finding.subject_id == stray["access_code_id"] and not finding.needs_human
    assert "revoked" in finding.problem and "access service" in finding.truth
    await access.run_jobs()
    assert await access.codes(name=name) == []
    assert await _drift(access) == []
    async with access.app.deps.uows.transaction() as uow:
        [stored] = await uow.findings.listed(None)
    assert (stored.kind, stored.state) == (FindingKind.REMOTE_CODE_WITHOUT_GRANT, "cleared")


async def test_a_code_named_like_ours_that_nobody_here_knows_waits_for_a_human(
    access: AccessHarness,
) -> None:
    window = (await _active(access)).window
    unknown = await access.add_code(f"{access.app.settings.alias_prefix}-{uuid.uuid4()}", window)
    await access.add_code("the-owners-own-code", window)  # not ours: not judged at all

    finding = _only(await _drift(access), FindingKind.REMOTE_CODE_WITHOUT_GRANT)
    assert finding.needs_human and "human" in finding.repair_text
    await access.run_jobs()
    assert await access.codes(name=unknown["name"]) == [unknown]  # left alone
    _only(await _drift(access), FindingKind.REMOTE_CODE_WITHOUT_GRANT)  # still reported
    async with access.app.deps.uows.transaction() as uow:
        [stored] = await uow.findings.listed("open")
    assert stored.subject_id == unknown["access_code_id"] and stored.needs_human


async def test_an_active_grant_whose_code_vanished_gets_a_new_code(access: AccessHarness) -> None:
    booking = await _active(access)
    before = await access.grant(booking)
    [provision] = await access.provisions(before)
    assert provision.provider_code_id
    await access.delete_code(provision.provider_code_id)

    finding = _only(await _drift(access), FindingKind.ACTIVE_GRANT_CODE_MISSING)
    assert finding.subject_id == before.grant_id and "provider" in finding.truth
    await access.run_jobs()
    after = await access.grant(booking)
    assert after.grant_id == before.grant_id and after.provision_id != before.provision_id
    assert after.state is GrantState.ACTIVE
    pin = await access.pin(after)
    assert pin and await access.opens(pin, booking.window.valid_from)
    assert await _drift(access) == []


async def test_a_plan_that_missed_its_activation_is_activated(access: AccessHarness) -> None:
    booking = await access.confirm()
    await access.sql(  # the activation job is lost
        "UPDATE timers SET state = 'cancelled' WHERE kind = :kind", kind=jobs.ACTIVATE
    )
    finding = _only(await _drift(access), FindingKind.MISSED_ACTIVATION)
    assert finding.subject_id == (await access.grant(booking)).grant_id
    await access.run_jobs()
    assert (await access.grant(booking)).state is GrantState.ACTIVE
    assert await _drift(access) == []


async def test_a_revocation_pending_too_long_is_removed_again(
    make_access: HarnessFactory,
) -> None:
    access = await make_access(revocation_overdue_s=0)
    booking = await _active(access)
    await access.faults(fail_next_calls=20)
    await access.cancel(booking)
    await access.run_jobs()  # every try of the removal gets a 503
    assert (await access.grant(booking)).state is GrantState.REVOKE_PENDING
    await access.lock.delete("/_sandbox/faults")

    finding = _only(await _drift(access), FindingKind.REVOCATION_PENDING_TOO_LONG)
    assert "closed" in finding.problem and not finding.needs_human
    await access.run_jobs()
    assert (await access.grant(booking)).state is GrantState.REVOKED
    assert await access.codes() == []
    assert await _drift(access) == []
