"""Creating codes at the provider without a blind retry, and removing only what is stale.

On the real database and the sandbox lock provider process, with its faults: a create
answered with a time-out, a create applied twice, a cancellation or a move while the code
is being created, and removal jobs that fire late with the state they once expected.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from liftfit.access.v1 import events_pb2 as aev

from services.access.domain.model import CodeToRemove, GrantState, ProvisionState, alias
from services.access.service_layer import jobs
from tests.access.conftest import HarnessFactory
from tests.access.harness import AccessHarness, Booking, window_from_now
from tests.support.waiting import eventually

INSIDE = timedelta(minutes=1)  # a moment inside a window, from its start


async def _alias_of(access: AccessHarness, booking: Booking) -> str:
    grant = await access.grant(booking)
    return alias(access.app.settings.alias_prefix, grant.provision_id)


async def test_a_create_answered_with_a_time_out_leaves_exactly_one_code_and_adopts_it(
    access: AccessHarness,
) -> None:
    await access.faults(timeout_next_creates=1, hang_seconds=3)
    booking = await access.confirm()
    await access.run_jobs()

    grant = await access.grant(booking)
    assert grant.state is GrantState.ACTIVE
    codes = await access.codes(name=await _alias_of(access, booking))
    assert len(codes) == 1
    [provision] = await access.provisions(grant)
    assert provision.provider_code_id == codes[0]["access_code_id"]
    assert await access.pin(grant) == codes[0]["code"]
    assert await access.opens(codes[0]["code"], booking.window.valid_from + INSIDE)
    assert await access.incidents() == []


async def test_a_create_that_never_arrived_is_sent_again_after_the_look_up_finds_nothing(
    access: AccessHarness,
) -> None:
    await access.faults(fail_next_calls=2)  # the create and the look-up after it: 503
    booking = await access.confirm()
    await access.run_jobs()

    grant = await access.grant(booking)
    assert grant.state is GrantState.ACTIVE
    assert len(await access.codes(name=await _alias_of(access, booking))) == 1


async def test_a_duplicate_on_the_device_is_an_incident_and_neither_code_is_adopted(
    access: AccessHarness,
) -> None:
    await access.faults(duplicate_next_creates=1, timeout_next_creates=1, hang_seconds=3)
    booking = await access.confirm()
    name = await _alias_of(access, booking)
    await access.fire_due()  # the activation: created twice, answered with a time-out

    [incident] = await access.incidents("duplicate_credential")
    grant = await access.grant(booking)
    assert grant.state is GrantState.FAILED
    [provision] = await access.provisions(grant)
    assert (provision.state, provision.provider_code_id) == (ProvisionState.DUPLICATED, None)
    assert await access.pin(grant) is None
    assert incident.subject_id == provision.provision_id

    await access.run_jobs()  # neither is left to open the door either
    assert await access.codes(name=name) == []


async def _creation_hanging(
    access: AccessHarness, booking: Booking
) -> tuple[asyncio.Task[int], dict[str, str]]:
    """Starts the activation with a create that the provider applies and then leaves
    unanswered; returns once the code exists at the provider."""
    await access.faults(timeout_next_creates=1, hang_seconds=3)
    name = await _alias_of(access, booking)
    job = asyncio.create_task(access.fire_due())

    async def created() -> list[dict[str, str]]:
        return await access.codes(name=name)

    [code] = await eventually(created, 10)
    return job, code


async def test_a_booking_cancelled_while_its_code_is_created_gets_the_new_code_removed(
    access: AccessHarness,
) -> None:
    booking = await access.confirm()
    job, code = await _creation_hanging(access, booking)
    await access.cancel(booking)
    await job
    await access.run_jobs()

    grant = await access.grant(booking)
    assert grant.state is GrantState.REVOKED
    assert await access.codes(name=code["name"]) == []
    assert not await access.opens(code["code"], booking.window.valid_from + INSIDE)
    assert await access.pin(grant) is None  # never adopted, never stored
    assert len(await access.published(aev.RevocationConfirmed)) == 1
    assert await access.published(aev.AccessActivated) == []


async def test_a_move_during_provisioning_and_late_removals_leave_the_replacement_code_alone(
    access: AccessHarness,
) -> None:
    booking = await access.confirm()
    old_grant = await access.grant(booking)
    job, old_code = await _creation_hanging(access, booking)
    moved = await access.reschedule(booking)
    await job
    await access.run_jobs()

    new_grant = await access.grant(moved)
    assert new_grant.grant_id != old_grant.grant_id and new_grant.state is GrantState.ACTIVE
    [new_code] = await access.codes(name=await _alias_of(access, moved))
    [old_provision] = await access.provisions(old_grant)
    [new_provision] = await access.provisions(new_grant)

    # Late removals: the old grant's code again, and one that carries the new code under
    # the old grant's window (state that has changed since): neither touches the new code.
    stale = [
        CodeToRemove(
            old_grant.grant_id,
            old_provision.provision_id,
            old_code["access_code_id"],
            old_grant.window,
        ),
        CodeToRemove(
            new_grant.grant_id,
            new_provision.provision_id,
            new_code["access_code_id"],
            old_grant.window,
        ),
        CodeToRemove(
            new_grant.grant_id,
            new_provision.provision_id,
            new_code["access_code_id"],
            new_grant.window,
        ),
    ]
    for order in stale:
        await access.schedule(jobs.REMOVE_CODE, order.provider_code_id, order.to_json())
    await access.schedule(
        jobs.END_OF_WINDOW,
        old_grant.grant_id,
        {"grant_id": old_grant.grant_id, **old_grant.window.to_json()},
    )
    await access.run_jobs()

    assert (await access.grant(moved)).state is GrantState.ACTIVE
    assert await access.codes(name=new_code["name"]) == [new_code]
    assert await access.opens(new_code["code"], moved.window.valid_from + INSIDE)
    assert not await access.opens(old_code["code"], booking.window.valid_from + INSIDE)
    assert not await access.opens(old_code["code"], moved.window.valid_from + INSIDE)
    assert [g.state for g in await access.grants(booking)] == [
        GrantState.REVOKED,
        GrantState.ACTIVE,
    ]


async def test_a_moved_active_grant_is_revoked_only_when_the_provider_confirms_removal(
    make_access: HarnessFactory,
) -> None:
    access = await make_access(provider_max_tries=6, provider_retry_base_s=0.2)
    await access.faults(removing_delay_ms=1000)
    booking = await access.confirm()
    await access.run_jobs()
    old = await access.grant(booking)
    old_pin = await access.pin(old)
    assert old_pin
    moved = await access.reschedule(booking)
    assert await access.pin(old) is None  # not disclosable once the grant ended
    await access.fire_due()  # the removal: the provider answers "removing"
    assert (await access.grants(booking))[0].state is GrantState.REVOKE_PENDING
    assert await access.published(aev.RevocationConfirmed) == []
    await access.run_jobs()
    assert [g.state for g in await access.grants(booking)] == [
        GrantState.REVOKED,
        GrantState.ACTIVE,
    ]
    [confirmed] = await access.published(aev.RevocationConfirmed)
    assert (confirmed.grant_id, confirmed.slot_id) == (old.grant_id, booking.slot_id)
    assert not await access.opens(old_pin, booking.window.valid_from + INSIDE)
    new_pin = await access.pin(await access.grant(moved))
    assert new_pin and await access.opens(new_pin, moved.window.valid_from + INSIDE)


async def test_a_removal_the_provider_never_confirms_is_an_incident_and_the_grant_stays_pending(
    access: AccessHarness,
) -> None:
    booking = await access.confirm()
    await access.run_jobs()
    await access.faults(fail_next_calls=100)
    await access.cancel(booking)
    await access.run_jobs()
    assert (await access.grant(booking)).state is GrantState.REVOKE_PENDING
    assert await access.incidents("revocation_unconfirmed")
    assert await access.published(aev.RevocationConfirmed) == []


async def test_an_older_move_arriving_after_a_newer_one_never_takes_the_door_back(
    access: AccessHarness,
) -> None:
    booking = await access.confirm()
    second_slot, first_move = access.move(booking)
    third_slot, second_move = access.move(second_slot)
    await access.replay_move(second_move)  # the newer move is applied first
    await access.replay_move(first_move)  # the older one, replayed late: stale
    await access.replay_move(second_move)  # and the newer one again: already applied
    await access.run_jobs()
    [live] = [grant for grant in await access.grants(booking) if grant.is_live]
    assert (live.slot_id, live.window, live.state) == (
        third_slot.slot_id,
        third_slot.window,
        GrantState.ACTIVE,
    )
    assert len(await access.grants(booking)) == 2  # the confirmed one and the newest move's
    pin = await access.pin(live)
    assert pin and await access.opens(pin, third_slot.window.valid_from + INSIDE)
    assert [code["name"] for code in await access.codes()] == [
        alias(access.app.settings.alias_prefix, live.provision_id)
    ]


async def test_a_move_of_a_negative_number_is_parked_and_changes_nothing(
    access: AccessHarness,
) -> None:
    booking = await access.confirm()
    _, move = access.move(booking)
    move.move = -1
    assert await access.deliver(booking.booking_id, move) == "parked"
    [grant] = await access.grants(booking)
    assert grant.slot_id == booking.slot_id and grant.is_live


async def test_an_unnumbered_move_of_an_older_producer_is_applied_once(
    access: AccessHarness,
) -> None:
    booking = await access.confirm()
    moved, move = access.move(booking)
    move.move = 0  # as booking sent it before moves were numbered
    for _ in range(2):
        await access.replay_move(move)
    [live] = [grant for grant in await access.grants(booking) if grant.is_live]
    assert (live.slot_id, live.window) == (moved.slot_id, moved.window)
    assert len(await access.grants(booking)) == 2


async def test_no_code_is_created_before_the_activation_window_even_by_a_timer_fired_early(
    make_access: HarnessFactory,
) -> None:
    access = await make_access(activation_lead_s=3600)
    later = await access.confirm(window_from_now(timedelta(hours=3)))
    soon = await access.confirm(window_from_now(timedelta(minutes=30)))
    await access.run_jobs()  # only the soon one's activation is due
    assert (await access.grant(soon)).state is GrantState.ACTIVE
    assert (await access.grant(later)).state is GrantState.PLANNED

    planned = await access.grant(later)
    await access.sql(  # as a clock ahead of the database's would fire it: early
        "UPDATE timers SET due_at = now() WHERE aggregate_id = :provision AND kind = :kind",
        provision=planned.provision_id,
        kind=jobs.ACTIVATE,
    )
    assert await access.fire_due() == 1
    assert (await access.grant(later)).state is GrantState.PLANNED
    assert len(await access.codes()) == 1  # the soon booking's only
    [again] = [
        timer
        for timer in await access.timers()
        if timer.kind == jobs.ACTIVATE and timer.state == "pending"
    ]
    assert again.due_at == planned.window.valid_from - timedelta(hours=1)  # the window's opening


async def test_no_code_is_created_once_the_window_is_over(access: AccessHarness) -> None:
    over = await access.confirm(window_from_now(timedelta(hours=-3)))
    await access.sql(  # its end-of-window job has not run yet: the activation meets a live grant
        "UPDATE timers SET due_at = now() + interval '1 hour' WHERE kind = :kind",
        kind=jobs.END_OF_WINDOW,
    )
    assert await access.fire_due() == 1  # the activation, late
    assert await access.codes() == []
    assert (await access.grant(over)).state is GrantState.PLANNED
