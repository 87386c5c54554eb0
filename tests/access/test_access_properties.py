"""The access rules over generated interleavings, on the real database and the sandbox
lock provider process and its door.

Each example is one booking living through a generated sequence of confirmations (some
repeated), cancellation, moves, PIN reads, provider time-outs, duplicates and outages,
timers fired early, late or not at all, and stale removal and end-of-window jobs fired
late. After every step the rules are checked against the database and the door:

- a code exists at the provider only for a grant that was live with that window, and an
  active grant's code is at the provider and opens the door inside its window only;
- several codes under one alias are always a duplicate incident, and none is adopted;
- once everything has run, no grant that ended keeps a code at the provider;
- a stale job never removes the live grant's code, and a move replayed after a newer one
  never takes the grant back to a slot the booking has left;
- a PIN that was read never opens the door outside its window, nor after its grant's
  revocation was confirmed, and RevocationConfirmed only follows a confirmed removal;
- only an active grant has a sealed PIN, and no PIN is stored in clear.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from liftfit.access.v1 import events_pb2 as aev

from services.access.domain.commands import DisclosePin
from services.access.domain.errors import PinNotActive
from services.access.domain.model import (
    CodeToRemove,
    Grant,
    GrantState,
    ProvisionState,
    alias,
)
from services.access.service_layer import handlers, jobs
from tests.access.harness import AccessHarness, Booking, window_from_now
from tests.support.stored import columns_holding

STEPS = (
    "confirm",
    "cancel",
    "reschedule",
    "disclose",
    "timeout_next_create",
    "duplicate_next_create",
    "provider_outage",
    "fire",
    "run_jobs",
    "late_removals",
    "late_window_end",
    "replay_first_move",
)
INSIDE = timedelta(minutes=1)


@dataclass
class World:
    access: AccessHarness
    booking: Booking
    confirmed: bool = False
    cancelled: bool = False
    read: list[tuple[Grant, str]] = field(default_factory=list)  # grants whose PIN was read
    codes_seen: dict[str, tuple[Grant, str, str]] = field(default_factory=dict)
    duplicates_injected: int = 0
    moves: list[Any] = field(default_factory=list)  # the BookingRescheduled events sent

    def __repr__(self) -> str:
        return f"World(booking={self.booking.booking_id})"


async def _step(world: World, step: str) -> None:
    access, booking = world.access, world.booking
    if step == "confirm":
        event_booking = await access.confirm_existing(booking)
        world.confirmed = world.confirmed or event_booking
    elif step == "cancel" and world.confirmed:
        await access.cancel(booking)
        world.cancelled = True
    elif step == "reschedule" and world.confirmed and not world.cancelled:
        world.booking = await access.reschedule(booking, window_from_now(timedelta(hours=3)))
        world.moves.append(access.moves_sent[-1])
    elif step == "disclose" and world.confirmed:
        await _disclose(world)
    elif step == "timeout_next_create":
        await access.faults(timeout_next_creates=1, hang_seconds=1.5)
    elif step == "duplicate_next_create":
        world.duplicates_injected += 1
        await access.faults(duplicate_next_creates=1)
    elif step == "provider_outage":
        await access.faults(fail_next_calls=2)
    elif step == "fire":
        await access.fire_due()
    elif step == "run_jobs":
        await access.run_jobs(within=30)
    elif step == "late_removals":
        await _late_removals(world)
    elif step == "replay_first_move" and world.moves:
        await access.replay_move(world.moves[0])
    elif step == "late_window_end":
        for grant in await access.grants(booking):
            expected = {"grant_id": grant.grant_id, **grant.window.to_json()}
            await access.schedule(jobs.END_OF_WINDOW, grant.grant_id, expected)
            await access.sql(  # as if its window had just ended: it fires now
                "UPDATE timers SET due_at = now() WHERE aggregate_id = :grant AND kind = :kind",
                grant=grant.grant_id,
                kind=jobs.END_OF_WINDOW,
            )
            break  # only the first (oldest) grant: a late job for a window that is over


async def _disclose(world: World) -> None:
    booking = world.booking
    command = DisclosePin.of(booking.org_id, booking.booking_id, "anna", "customer_view")
    try:
        async with world.access.app.deps.uows.transaction() as uow:
            view = await handlers.disclose_pin(uow, command)
    except PinNotActive:
        return
    assert view.grant.state is GrantState.ACTIVE
    world.read.append((view.grant, view.pin))


async def _late_removals(world: World) -> None:
    """Every code ever seen, removed by a job carrying the state it was first seen in."""
    for code_id, (grant, provision_id, _) in world.codes_seen.items():
        order = CodeToRemove(grant.grant_id, provision_id, code_id, grant.window)
        await world.access.schedule(jobs.REMOVE_CODE, code_id, order.to_json())
    await world.access.fire_due()


async def _check(world: World, quiet: bool) -> None:
    access = world.access
    prefix = access.app.settings.alias_prefix
    grants = await access.grants(world.booking)
    duplicates = {i.subject_id for i in await access.incidents("duplicate_credential")}
    for grant in grants:
        for provision in await access.provisions(grant):
            live = await access.codes(name=alias(prefix, provision.provision_id))
            for code in live:
                world.codes_seen.setdefault(
                    code["access_code_id"], (grant, provision.provision_id, code["code"])
                )
                # Created only with the grant's own window.
                assert (
                    code["starts_at"].replace("Z", "+00:00") == grant.window.valid_from.isoformat()
                )
            if len(live) > 1:
                assert provision.provision_id in duplicates, (provision, live)
                assert provision.state is not ProvisionState.CREATED
            if quiet and not grant.is_live:
                assert live == [], (grant, provision, live)
            sealed = (
                await access.pin(grant) if grant.provision_id == provision.provision_id else None
            )
            if grant.state is not GrantState.ACTIVE:
                assert sealed is None, grant
        if grant.state is GrantState.ACTIVE:
            assert not world.cancelled and grant.slot_id == world.booking.slot_id
            pin = await access.pin(grant)
            assert pin and await access.opens(pin, grant.window.valid_from + INSIDE)
            assert not await access.opens(pin, grant.window.valid_to + INSIDE)
    live_grants = [g for g in grants if g.is_live]
    assert len(live_grants) <= 1
    assert all(g.slot_id == world.booking.slot_id for g in live_grants), live_grants
    assert not (world.cancelled and live_grants), live_grants
    revoked = {g.grant_id for g in grants if g.state is GrantState.REVOKED}
    confirmed = {
        e.grant_id
        for e in await access.published(aev.RevocationConfirmed)
        if e.booking_id == world.booking.booking_id
    }
    assert confirmed == revoked
    for grant, pin in world.read:
        assert not await access.opens(pin, grant.window.valid_to + INSIDE)
        assert not await access.opens(pin, grant.window.valid_from - INSIDE)
        if grant.grant_id in revoked:
            assert not await access.opens(pin, grant.window.valid_from + INSIDE)


@settings(
    max_examples=25,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # a failure prints as drawn: no shrinking
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(st.sampled_from(STEPS), min_size=1, max_size=24))
@example(steps=["confirm", "timeout_next_create", "fire", "cancel", "run_jobs", "late_removals"])
@example(steps=["confirm", "run_jobs", "disclose", "reschedule", "run_jobs", "late_removals"])
@example(steps=["duplicate_next_create", "confirm", "fire", "run_jobs", "late_window_end"])
@example(steps=["confirm", "provider_outage", "fire", "reschedule", "cancel", "run_jobs"])
@example(steps=["confirm", "reschedule", "reschedule", "replay_first_move", "run_jobs"])
async def test_access_rules_hold_over_any_interleaving(
    access: AccessHarness, steps: list[str]
) -> None:
    started = time.monotonic()
    await access.lock.delete("/_sandbox/faults")
    world = World(
        access, Booking(str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4()), window_from_now())
    )
    for step in steps:
        await _step(world, step)
        await _check(world, quiet=False)
    await access.lock.delete("/_sandbox/faults")
    await access.run_jobs(within=30)
    await _check(world, quiet=True)
    async with access.app.deps.uows.transaction() as uow:
        for _, pin in world.read:
            assert await columns_holding(uow.session, pin) == []
    assert time.monotonic() - started < 30
