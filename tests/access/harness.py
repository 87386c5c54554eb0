"""The access service driven step by step on real PostgreSQL and the sandbox lock provider.

The service is built by its own bootstrap() but its workers are not started: a test hands
booking events to its real inbox, fires its due timers with its real timer runner, and
reads its tables, so every step is a step of the test and nothing happens behind it.
(The gRPC API and Kafka are exercised where a test starts the app, and in tests/e2e.)
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import count
from typing import Any

import httpx
from google.protobuf.message import Message
from liftfit.booking.v1 import events_pb2 as bev
from sqlalchemy import select, text

from servicekit import envelope
from servicekit.protobuf import timestamp
from servicekit.records import Delivery
from services.access.adapters import orm
from services.access.bootstrap import AccessApp
from services.access.domain.model import Grant, Provision, Window
from services.access.service_layer import jobs

API_KEY = "seam_test_access_suite"
DEVICE = "studio-a-door"
OTHER_DEVICE = "studio-b-door"
DEVICES = (DEVICE, OTHER_DEVICE)
PROVIDER_JOBS = (jobs.ACTIVATE, jobs.REMOVE_CODE, jobs.DRIFT_RUN, jobs.END_OF_WINDOW)
_offsets = count()


def new_id() -> str:
    return str(uuid.uuid4())


def window_from_now(start_in: timedelta = timedelta(hours=1), hours: int = 1) -> Window:
    start = datetime.now(UTC).replace(microsecond=0) + start_in
    return Window(start, start + timedelta(hours=hours))


def access_window(window: Window) -> bev.AccessWindow:
    return bev.AccessWindow(
        valid_from=timestamp(window.valid_from), valid_to=timestamp(window.valid_to)
    )


@dataclass
class Booking:
    booking_id: str
    org_id: str
    slot_id: str
    window: Window
    space_id: str = ""
    moves: int = 0


@dataclass
class AccessHarness:
    app: AccessApp
    lock: httpx.AsyncClient  # the sandbox lock provider, its control API included
    bookings: list[Booking] = field(default_factory=list)
    moves_sent: list[bev.BookingRescheduled] = field(default_factory=list)

    # --- the booking service's events, through the real inbox -----------------------------

    async def deliver(self, aggregate_id: str, event: Message) -> str:
        wrapped = envelope.wrap(event, aggregate_id, "booking", {}, uuid.uuid4())
        delivery = Delivery(
            self.app.settings.topic("booking.events"),
            0,
            next(_offsets),
            wrapped.SerializeToString(),
            key=aggregate_id.encode(),
        )
        return await self.app.inbox.deliver(delivery)

    async def confirm(self, window: Window | None = None, space_id: str = "") -> Booking:
        booking = Booking(new_id(), new_id(), new_id(), window or window_from_now(), space_id)
        await self.confirm_existing(booking)
        self.bookings.append(booking)
        return booking

    async def confirm_existing(self, booking: Booking) -> bool:
        """BookingConfirmed for `booking`, as often as a test sends it."""
        event = bev.BookingConfirmed(
            booking_id=booking.booking_id,
            org_id=booking.org_id,
            user="anna",
            slot_id=booking.slot_id,
            window=access_window(booking.window),
            payment_mode="card",
            space_id=booking.space_id,
        )
        assert await self.deliver(booking.booking_id, event) == "processed"
        return True

    async def cancel(self, booking: Booking) -> None:
        event = bev.BookingCancelled(booking_id=booking.booking_id, slot_id=booking.slot_id)
        assert await self.deliver(booking.booking_id, event) == "processed"

    async def reschedule(self, booking: Booking, window: Window | None = None) -> Booking:
        moved, event = self.move(booking, window)
        assert await self.deliver(booking.booking_id, event) == "processed"
        self.moves_sent.append(event)
        return moved

    def move(
        self, booking: Booking, window: Window | None = None
    ) -> tuple[Booking, bev.BookingRescheduled]:
        """The booking on a new slot, and the event that says so (not delivered)."""
        moved = Booking(
            booking.booking_id,
            booking.org_id,
            new_id(),
            window or window_from_now(),
            "",
            booking.moves + 1,
        )
        event = bev.BookingRescheduled(
            booking_id=booking.booking_id,
            org_id=booking.org_id,
            user="anna",
            old_slot_id=booking.slot_id,
            old_window=access_window(booking.window),
            new_slot_id=moved.slot_id,
            new_window=access_window(moved.window),
            move=moved.moves,
        )
        return moved, event

    async def replay_move(self, event: bev.BookingRescheduled) -> None:
        """A move delivered again under a new event id, as an operator's replay sends it."""
        assert await self.deliver(event.booking_id, event) == "processed"

    # --- timers --------------------------------------------------------------------------

    async def fire_due(self) -> int:
        return await self.app.timer_runner.fire_due()

    async def run_jobs(self, within: float = 15.0, kinds: tuple[str, ...] = PROVIDER_JOBS) -> None:
        """Fires due timers until no timer of these kinds is pending and due soon (retries
        wait their backoff, a few seconds at most here)."""
        deadline = asyncio.get_running_loop().time() + within
        while True:
            await self.fire_due()
            if not await self.pending_soon(kinds):
                return
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"jobs still pending after {within}s: {await self.timers()}")
            await asyncio.sleep(0.05)

    async def pending_soon(self, kinds: tuple[str, ...], horizon_s: float = 60.0) -> bool:
        t = orm.eventing.timers.c
        query = select(t.kind).where(
            t.state == "pending",
            t.kind.in_(kinds),
            t.due_at < datetime.now(UTC) + timedelta(seconds=horizon_s),
        )
        async with self.app.deps.uows.transaction() as uow:
            return (await uow.session.execute(query)).first() is not None

    async def timers(self) -> list[Any]:
        t = orm.eventing.timers.c
        async with self.app.deps.uows.transaction() as uow:
            query = select(t.kind, t.aggregate_id, t.state, t.expected, t.due_at, t.last_error)
            return list((await uow.session.execute(query.order_by(t.created_at))).all())

    async def schedule(self, kind: str, aggregate_id: str, expected: dict[str, Any]) -> None:
        async with self.app.deps.uows.transaction() as uow:
            await uow.schedule(kind, aggregate_id, expected)

    async def sql(self, statement: str, **params: Any) -> list[Any]:
        async with self.app.deps.uows.transaction() as uow:
            result = await uow.session.execute(text(statement), params)
            return list(result.all()) if getattr(result, "returns_rows", False) else []

    # --- what the service holds ------------------------------------------------------------

    async def grants(self, booking: Booking) -> list[Grant]:
        async with self.app.deps.uows.transaction() as uow:
            return await uow.grants.of_booking(booking.booking_id)

    async def grant(self, booking: Booking) -> Grant:
        async with self.app.deps.uows.transaction() as uow:
            found = await uow.grants.current(booking.booking_id)
        assert found is not None, f"no grant for booking {booking.booking_id}"
        return found

    async def provisions(self, grant: Grant) -> list[Provision]:
        async with self.app.deps.uows.transaction() as uow:
            return await uow.provisions.of_grant(grant.grant_id)

    async def pin(self, grant: Grant) -> str | None:
        async with self.app.deps.uows.transaction() as uow:
            return await uow.credentials.pin(grant.provision_id)

    async def incidents(self, kind: str | None = None) -> list[Any]:
        async with self.app.deps.uows.transaction() as uow:
            found = await uow.incidents.listed("open")
        return [i for i in found if kind is None or i.kind == kind]

    async def published(self, kind: type[Message]) -> list[Any]:
        t = orm.eventing.outbox.c
        async with self.app.deps.uows.transaction() as uow:
            query = select(t.payload).where(t.event_type == kind.DESCRIPTOR.full_name)
            rows = await uow.session.execute(query.order_by(t.seq))
            return [envelope.unpack(envelope.parse(row.payload)) for row in rows]

    # --- the provider and its door ---------------------------------------------------------

    async def codes(self, **filters: str) -> list[dict[str, Any]]:
        """Live codes at the provider (what its list call shows), read through the sandbox's
        control API, which spends none of the faults a test set on the provider API."""
        answer = await self.lock.get("/_sandbox/access_codes")
        answer.raise_for_status()
        return [
            {k: v for k, v in code.items() if k != "status_history"}
            for code in answer.json()["data"]
            if code["status"] != "removed"
            and all(code[name] == value for name, value in filters.items())
        ]

    async def opens(self, pin: str, at: datetime, device: str = DEVICE) -> bool:
        answer = await self.lock.post(
            "/_sandbox/door", json={"device_id": device, "pin": pin, "at": at.isoformat()}
        )
        answer.raise_for_status()
        return bool(answer.json()["opens"])

    async def faults(self, **faults: Any) -> None:
        (await self.lock.post("/_sandbox/faults", json=faults)).raise_for_status()

    async def add_code(self, name: str, window: Window, device: str = DEVICE) -> dict[str, Any]:
        body = {
            "device_id": device,
            "name": name,
            "starts_at": window.valid_from.isoformat(),
            "ends_at": window.valid_to.isoformat(),
        }
        answer = await self.lock.post("/access_codes/create", json=body)
        answer.raise_for_status()
        return dict(answer.json()["access_code"])

    async def delete_code(self, code_id: str) -> None:
        answer = await self.lock.post("/access_codes/delete", json={"access_code_id": code_id})
        answer.raise_for_status()
