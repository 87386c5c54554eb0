"""Acceptance g: invariants 7-12 over generated interleavings, on the real database.

Each example is one booking's payment living through a generated sequence of duplicated
paid notifications, failed notifications, forged "paid" hints, hold expiry, cancellation,
refund outcomes and gateway timeouts, in any order. The real handlers, unit of work,
outbox and durable timers run against PostgreSQL; the card gateway is the in-memory fake
and the booking service is played by a small model that reacts to the outbox as it would.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from liftfit.booking.v1 import events_pb2 as booking
from liftfit.payment.v1 import events_pb2
from sqlalchemy import select

from servicekit import db, envelope
from servicekit.timers import TimerRunner
from services.payment.bootstrap import PaymentApp, bootstrap
from services.payment.domain import payment_states as states
from services.payment.domain.signature import sign
from services.payment.service_layer import event_handlers, handlers
from tests.payment.conftest import test_settings
from tests.payment.fake_gateway import FakeCardGateway
from tests.payment.harness import SECRETS, notification_body

STEPS = (
    "pay",
    "pay_notified_twice",
    "fail",
    "forged_paid_hint",
    "hold_expires",
    "booking_cancelled",
    "timeout_next_create",
    "timeout_next_refund",
    "decline_refunds",
    "run_jobs",
    "booking_reacts",
)
AMOUNT = 45000


@dataclass
class Service:
    app: PaymentApp
    gateway: FakeCardGateway
    runner: TimerRunner

    def __repr__(self) -> str:
        return "Service(real database, fake gateway)"


@pytest.fixture
async def service(service_database: Callable[[str], str]) -> AsyncIterator[Service]:
    url = service_database("payment")
    base = test_settings(url, "127.0.0.1:1", "http://127.0.0.1:1", f"p{uuid.uuid4().hex[:6]}.")
    fake = FakeCardGateway(engine=db.make_engine(url, pool_size=2))
    app = bootstrap(replace(base, gateway_retry_base_s=0.0, gateway_max_tries=3), gateway=fake)
    yield Service(app, fake, app.timer_runner)
    await app.runtime.engine.dispose()  # built, never started: nothing else to release
    await fake.engine.dispose()


@dataclass
class World:
    """One example: the booking as the booking service sees it, and what we observed."""

    service: Service
    booking_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    booking_state: str = "pending"
    confirmations: int = 0
    history: list[str] = field(default_factory=list)
    reacted: set[str] = field(default_factory=set)
    ever_paid_remotely: bool = False

    async def local(self) -> Any:
        return await handlers.get_payment_for_booking(self.service.app.deps, self.booking_id)

    async def remote(self) -> Any:
        local = await self.local()
        found = await self.service.gateway.find_by_reference(str(local.payment_id))
        return found[0] if found else None

    async def record(self) -> None:
        local = await self.local()
        self.history.append(local.state)
        remote = await self.remote()
        self.ever_paid_remotely |= remote is not None and remote.state in ("paid", "refunded")

    async def events(self) -> list[tuple[str, Any]]:
        outbox = self.service.app.tables.eventing.outbox
        query = select(outbox.c.effect_id, outbox.c.payload).where(outbox.c.key == self.booking_id)
        async with self.service.app.sessions() as session:
            rows = (await session.execute(query.order_by(outbox.c.seq))).all()
        return [(str(r.effect_id), envelope.unpack(envelope.parse(r.payload))) for r in rows]


async def _in_tx(world: World, reaction: Any, event: Any) -> None:
    async with world.service.app.deps.uows.transaction() as uow:
        await reaction(uow, event)


async def _notify(world: World, claimed_state: str) -> None:
    remote = await world.remote()
    if remote is None:
        return
    body = notification_body(remote.provider_payment_id, claimed_state, remote.reference)
    await handlers.handle_notification(
        world.service.app.deps, body, sign(body, SECRETS, int(time.time()))
    )


async def _settle(world: World, outcome: str, copies: int) -> None:
    remote = await world.remote()
    if remote is not None and world.service.gateway.settle(remote.provider_payment_id, outcome):
        for _ in range(copies):
            await _notify(world, outcome)


async def _run_jobs(world: World) -> None:
    for _ in range(20):
        if await world.service.runner.fire_due() == 0:
            return


async def _booking_reacts(world: World) -> None:
    """The booking service: confirm a pending booking once, report money without one."""
    for effect_id, event in await world.events():
        if effect_id in world.reacted or not isinstance(event, events_pb2.PaymentSucceeded):
            continue
        world.reacted.add(effect_id)
        if world.booking_state == "pending":
            world.booking_state = "confirmed"
            world.confirmations += 1
        else:
            orphan = booking.PaymentWithoutBooking(booking_id=world.booking_id, reason="gone")
            await _in_tx(world, event_handlers.payment_without_booking, orphan)


async def _step(world: World, step: str) -> None:
    gateway = world.service.gateway
    if step == "pay":
        await _settle(world, "paid", 1)
    elif step == "pay_notified_twice":
        await _settle(world, "paid", 2)
    elif step == "fail":
        await _settle(world, "failed", 1)
    elif step == "forged_paid_hint":
        await _notify(world, "paid")  # a validly signed body whose claim may be false
    elif step == "hold_expires" and world.booking_state == "pending":
        world.booking_state = "expired"
        await _in_tx(
            world,
            event_handlers.booking_expired,
            booking.BookingExpired(booking_id=world.booking_id),
        )
    elif step == "booking_cancelled" and world.booking_state in ("pending", "confirmed"):
        refund_due = world.booking_state == "confirmed"
        world.booking_state = "cancelled"
        cancelled = booking.BookingCancelled(booking_id=world.booking_id, refund_due=refund_due)
        await _in_tx(world, event_handlers.booking_cancelled, cancelled)
    elif step == "timeout_next_create":
        gateway.timeout_next_creates += 1
    elif step == "timeout_next_refund":
        gateway.timeout_next_refunds += 1
    elif step == "decline_refunds":
        gateway.decline_refunds = True
    elif step == "run_jobs":
        await _run_jobs(world)
    elif step == "booking_reacts":
        await _booking_reacts(world)


async def _quiesce(world: World) -> None:
    """No new input: every job, reaction and one last notification run to the end."""
    world.service.gateway.timeout_next_creates = 0
    world.service.gateway.timeout_next_refunds = 0
    for _ in range(5):
        await _run_jobs(world)
        await _booking_reacts(world)
        await _notify(world, "hint")
        await _run_jobs(world)
        await world.record()


def _reachable(current: str, later: str) -> bool:
    frontier, seen = [current], {current}
    while frontier:
        for nxt in states.ALLOWED.get(frontier.pop(), frozenset()):
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    return later in seen


async def _check_invariants(world: World) -> None:
    local = await world.local()
    remote = await world.remote()
    events = [e for _, e in await world.events()]
    gateway = world.service.gateway
    # 7: the snapshot never changes; a hint is never taken for the truth.
    assert (local.amount.amount, local.amount.currency) == (AMOUNT, "CZK")
    if local.state == states.PAID:
        assert remote is not None and remote.state == "paid"
    # 8: never backwards; one confirmation; one of each effect.
    for before, after in zip(world.history, world.history[1:], strict=False):
        assert before == after or _reachable(before, after), world.history
    assert world.confirmations <= 1
    for kind in (events_pb2.PaymentSucceeded, events_pb2.RefundRequested):
        assert sum(isinstance(e, kind) for e in events) <= 1, events
    # A refund announced as failed may later be announced as done (the gateway shows it
    # refunded after all); each outcome is announced once, and "failed" never follows "done".
    outcomes = [e.state for e in events if isinstance(e, events_pb2.PaymentRefunded)]
    assert outcomes in ([], ["refunded"], ["refund_failed"], ["refund_failed", "refunded"]), events
    # 9 and 10: money always has an owner: a confirmed booking or a refund.
    if world.ever_paid_remotely:
        if world.booking_state == "confirmed":
            assert local.state == states.PAID
        else:
            assert local.state in (states.REFUNDED, states.REFUND_FAILED), world.history
    if local.state == states.REFUNDED:
        refunded = gateway.payments[remote.provider_payment_id].refunded_amount
        assert remote.state == "refunded" and refunded == AMOUNT  # never twice
    if local.state == states.REFUND_FAILED:
        incidents = await handlers.list_incidents(world.service.app.deps, "open")
        assert any(i.subject_id == str(local.payment_id) for i in incidents)
    # 12: committed before the call, one provider key per attempt, one remote payment.
    assert str(local.payment_id) not in gateway.uncommitted_creates
    mine = await gateway.find_by_reference(str(local.payment_id))
    assert len(mine) <= 1
    assert all(
        gateway.payments[p.provider_payment_id].key == f"payment-{local.payment_id}-attempt-1"
        for p in mine
    )


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(st.sampled_from(STEPS), min_size=1, max_size=14))
# The races the seeds name, always tried besides the generated ones.
@example(steps=["hold_expires", "pay", "run_jobs"])
@example(steps=["pay", "booking_reacts", "booking_cancelled", "timeout_next_refund", "run_jobs"])
@example(steps=["pay_notified_twice", "hold_expires", "booking_reacts", "decline_refunds"])
@example(steps=["timeout_next_create", "timeout_next_create", "forged_paid_hint", "run_jobs"])
async def test_payment_invariants_hold_over_any_interleaving(
    service: Service, steps: list[str]
) -> None:
    service.gateway.decline_refunds = False
    world = World(service)
    request = booking.PaymentRequested(
        booking_id=world.booking_id,
        org_id=str(uuid.uuid4()),
        price=booking.Money(amount=AMOUNT, currency="CZK"),
    )
    await _in_tx(world, event_handlers.open_booking_payment, request)
    await _run_jobs(world)
    await world.record()

    for step in steps:
        await _step(world, step)
        await world.record()
    await _quiesce(world)

    await _check_invariants(world)
