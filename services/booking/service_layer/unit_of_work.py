"""The booking service's unit of work: servicekit's, with the booking repositories."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import unit_of_work as kit
from servicekit.idempotency_keys import IdempotencyKeys
from servicekit.incidents import Incidents
from servicekit.schema import CANCELLED, PENDING
from services.booking.adapters import orm
from services.booking.adapters.card_checkouts import CardCheckouts
from services.booking.adapters.catalogue import SpaceRepository, UnownedPaymentRepository
from services.booking.adapters.disclosures import DisclosureRepository
from services.booking.adapters.pass_orders import PassOrderRepository
from services.booking.adapters.passes import PassRepository
from services.booking.adapters.repository import (
    BookingRepository,
    SlotRepository,
    slot_taken_is_unavailable,
)
from services.booking.domain.model import PaymentMode

RELEASE_UNPAID_HOLD = "release_unpaid_hold"
_HOLD_RELEASES = uuid.UUID("6f1d3c1e-0b7a-4d5e-9a51-2f4b8c0e7d13")  # names the hold releases


@dataclass(frozen=True)
class Policy:
    """The service's configuration as the handlers see it."""

    hold_seconds: int
    terms_version: str


class UnitOfWork(kit.UnitOfWork):
    def __init__(
        self, session: AsyncSession, effects: kit.Effects, policy: Policy, keys: IdempotencyKeys
    ) -> None:
        super().__init__(session, effects)
        self.policy = policy
        self.idempotency = keys.within(session)
        self.spaces = SpaceRepository(session)
        self.slots = SlotRepository(session)
        self.bookings = BookingRepository(session)
        self.passes = PassRepository(session)
        self.pass_orders = PassOrderRepository(session)
        self.disclosures = DisclosureRepository(session)
        self.unowned_payments = UnownedPaymentRepository(session)
        self.incidents = Incidents(orm.eventing.incidents).within(session)
        self.card_checkouts = CardCheckouts(session, effects, keys)

    @asynccontextmanager
    async def writes_together(self) -> AsyncIterator[None]:
        """The block's writes travel in one round trip; a taken slot, refused by the
        one-live-booking index when the block ends, is reported as slot_unavailable."""
        with slot_taken_is_unavailable():
            async with super().writes_together():
                yield

    @asynccontextmanager
    async def last_writes(self) -> AsyncIterator[None]:
        """As writes_together, and the commit travels with the writes."""
        with slot_taken_is_unavailable():
            async with super().last_writes():
                yield

    @staticmethod
    def hold_release(booking_id: str) -> tuple[uuid.UUID, str, dict[str, str]]:
        """The timer that releases a card checkout's hold: its id (one per booking, so the
        booking can find it again), its kind and what it expects."""
        return (
            hold_release_id(booking_id),
            RELEASE_UNPAID_HOLD,
            {
                "booking_id": booking_id,
                "state": "pending",
            },
        )

    async def cancel_hold_release(self, booking_id: str) -> None:
        """The booking left `pending`: its hold's release can no longer act, and an operator
        must not see the booking waiting on it. A release the runner is firing right now is
        skipped, not waited for (it finds the booking moved on and does nothing), so this
        never waits on a timer row while holding the booking's."""
        t = self._effects.timers.table
        firing_now = (
            select(t.c.timer_id)
            .where(t.c.timer_id == hold_release_id(booking_id), t.c.state == PENDING)
            .with_for_update(skip_locked=True)
        )
        await self.session.execute(
            update(t).where(t.c.timer_id.in_(firing_now.scalar_subquery())).values(state=CANCELLED)
        )


def hold_release_id(booking_id: str) -> uuid.UUID:
    return uuid.uuid5(_HOLD_RELEASES, booking_id)


UnitOfWorkFactory = kit.UnitOfWorkFactory[UnitOfWork]


def checkout_transaction(
    uows: UnitOfWorkFactory, payment_mode: PaymentMode
) -> AbstractAsyncContextManager[UnitOfWork]:
    """A card checkout, the hot path, is one statement on the driver alone (see
    transaction_on_driver and CardCheckouts); a pass checkout debits the ledger through
    the ORM, in an ordinary transaction."""
    if payment_mode is PaymentMode.CARD:
        return uows.transaction_on_driver()
    return uows.transaction()


def unit_of_work_factory(
    sessions: async_sessionmaker[AsyncSession],
    effects: kit.Effects,
    policy: Policy,
    keys: IdempotencyKeys,
) -> UnitOfWorkFactory:
    return UnitOfWorkFactory(sessions, lambda session: UnitOfWork(session, effects, policy, keys))
