"""A broker restart under steady card journeys delays work in every service and loses none.

The whole platform as `make up` runs it (the suites' shared platform). Customers keep
booking by card through the gateway and paying on the card sandbox's hosted page, so every
service keeps publishing: booking its bookings, payment its payments, access its
activations, notify its mails. Meanwhile Kafka is stopped (or SIGKILLed), kept down for
about 25 s, and started again, with no service restarted. Afterwards every booking has
its payment link, every paid one is confirmed with an active PIN and both its mails, and
in every service's outbox every row written since the test began went out: none failed,
none left pending.

A stopped broker hands its partitions over before it goes: a batch a producer had already
numbered is then given up, and aiokafka's idempotent producer is left with a gap that the
broker refuses on every later batch. The relays replace such a producer; before they did,
every later row of the partition spent its attempts and ended failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.gateway.api import OPS, Api, Org
from tests.support.infrastructure import kill_kafka, start_kafka, stop_kafka
from tests.support.platform import Platform, database
from tests.support.sandboxes import SandboxAuth
from tests.support.waiting import eventually

SERVICES = ("booking", "payment", "access", "notify")
CUSTOMERS = 3
BOOKING_EVERY_S = 1.2  # per customer: about 2.5 checkouts a second in all
BEFORE_S = 6.0
OUTAGE_S = 25.0
AFTER_S = 6.0
SETTLED_WITHIN_S = 180.0
BUSY_TRIES = 20
SLOT_MINUTES, SLOT_EVERY_MINUTES = 2, 3  # short slots, all inside access's lead time


@dataclass(repr=False)
class Customer:
    org: Org
    email: str
    bookings: list[str] = field(default_factory=list)


@dataclass(repr=False)
class Journeys:
    """What the customers did: their bookings and the payments made at the sandbox."""

    api: Api
    card: httpx.AsyncClient
    mail: httpx.AsyncClient
    slots: list[str]
    customers: list[Customer]
    paid: set[str] = field(default_factory=set)
    payers: set[asyncio.Task[None]] = field(default_factory=set)

    async def run(self, customer: Customer, until: asyncio.Event) -> None:
        while not until.is_set() and self.slots:
            booking_id = await self._book(customer, self.slots.pop())
            customer.bookings.append(booking_id)
            payer = asyncio.create_task(self._pay(customer, booking_id))
            self.payers.add(payer)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(until.wait(), BOOKING_EVERY_S)

    async def _book(self, customer: Customer, slot_id: str) -> str:
        key = f"restart-{uuid.uuid4().hex}"  # one logical checkout, however often it is sent
        answer = await _answered(lambda: self.api.book(customer.org, slot_id, key=key))
        assert answer.status_code == 201, answer.text
        return str(answer.json()["booking_id"])

    async def _pay(self, customer: Customer, booking_id: str) -> None:
        """Pays on the sandbox's hosted page once the booking has its payment link."""
        linked = functools.partial(self._link, customer, booking_id)
        link = await eventually(linked, SETTLED_WITHIN_S, every=0.5)
        provider_id = link.rsplit("/", 1)[1]
        paid = await self.card.post(
            f"/_sandbox/payments/{provider_id}/settle", json={"outcome": "succeed"}
        )
        assert paid.status_code == 200, paid.text
        self.paid.add(booking_id)

    async def _link(self, customer: Customer, booking_id: str) -> str | None:
        found = await self._booking(customer, booking_id)
        link: str | None = (found.get("payment") or {}).get("checkout_url")
        return link

    async def _booking(self, customer: Customer, booking_id: str) -> dict[str, Any]:
        path = f"/v1/orgs/{customer.org.org_id}/bookings/{booking_id}"
        answer = await _answered(lambda: self.api.call("GET", path, customer.org.owner))
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        return found


@pytest.mark.parametrize("fault", ["stopped", "killed"])
async def test_card_journeys_across_a_broker_restart_lose_no_event_in_any_service(
    shared_platform: Platform, fault: str
) -> None:
    platform = shared_platform
    marks = {name: await _last_seq(platform, name) for name in SERVICES}
    logs = _LogMarks(platform.state / "log")
    async with _journeys(platform) as journeys:
        until = asyncio.Event()
        customers = [asyncio.create_task(journeys.run(c, until)) for c in journeys.customers]
        try:
            await asyncio.sleep(BEFORE_S)  # steady work before the fault
            await asyncio.to_thread(stop_kafka if fault == "stopped" else kill_kafka)
            down_since = time.monotonic()
            try:
                await _keep_working(customers, down_since + OUTAGE_S)
            finally:
                await asyncio.to_thread(start_kafka)
            await _keep_working(customers, time.monotonic() + AFTER_S)
        finally:
            until.set()
            await asyncio.gather(*customers)
        await asyncio.gather(*journeys.payers)
        booked = [b for c in journeys.customers for b in c.bookings]
        assert len(booked) >= 20, "too few checkouts to prove anything"
        assert journeys.paid == set(booked)  # every booking got its payment link
        for customer in journeys.customers:
            await _wait_settled(journeys, customer)

    for name in SERVICES:
        drained = functools.partial(_outbox_drained, platform, name, marks[name])
        await eventually(drained, 60, every=0.5)
        assert await _failed_rows(platform, name, marks[name]) == []
    replaced = logs.services_with("producer replaced")
    print(f"{len(booked)} card journeys; producers replaced in: {sorted(replaced) or 'none'}")
    refusals = logs.lines_with("refused (attempt")  # the relay blamed a row
    assert refusals == [], "\n".join(refusals)


async def _answered(call: Callable[[], Awaitable[httpx.Response]]) -> httpx.Response:
    """The gateway's answer, asked again while it says a service is unavailable for now
    (503: "try again") or a kept-alive connection closes under the request, as a client
    does; a busy machine makes a service late at times. Only reads and requests under one
    idempotency key come here."""
    for _ in range(BUSY_TRIES):
        try:
            answer = await call()
        except httpx.TransportError:
            await asyncio.sleep(0.5)
            continue
        if answer.status_code != 503:
            return answer
        await asyncio.sleep(0.5)
    return await call()


async def _keep_working(customers: list[asyncio.Task[None]], until: float) -> None:
    """Waits until `until` (monotonic), failing at once if a customer failed."""
    while time.monotonic() < until:
        for customer in customers:
            if customer.done():
                customer.result()  # raises the customer's failure
        await asyncio.sleep(0.2)


@contextlib.asynccontextmanager
async def _journeys(platform: Platform) -> AsyncIterator[Journeys]:
    async with (
        Api.at(platform.gateway) as api,
        # A new connection for each payment: the hosted page's answer is not asked twice.
        httpx.AsyncClient(
            base_url=platform.url("CARD_GATEWAY_PORT"),
            auth=SandboxAuth(),
            timeout=15,
            limits=httpx.Limits(max_keepalive_connections=0),
        ) as card,
        httpx.AsyncClient(base_url=platform.url("MAIL_SANDBOX_HTTP_PORT"), timeout=15) as mail,
    ):
        slots = await _short_slots(api, needed=int(60 / BOOKING_EVERY_S * CUSTOMERS) + 10)
        customers = []
        for _ in range(CUSTOMERS):
            email = f"restart-{uuid.uuid4().hex[:10]}@example.test"
            customers.append(Customer(await api.org(email=email), email))
        yield Journeys(api, card, mail, slots, customers)


async def _short_slots(api: Api, needed: int) -> list[str]:
    """Slots of a few minutes, from twenty minutes ahead, in studios of thirty each."""
    first = datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(minutes=20)
    slots: list[str] = []
    while len(slots) < needed:
        studio = {"name": "Restart", "timezone": "UTC"}
        space = await api.call("POST", "/v1/ops/spaces", OPS, studio)
        assert space.status_code == 201, space.text
        starts = [first + timedelta(minutes=SLOT_EVERY_MINUTES * i) for i in range(30)]
        new = [
            {
                "starts_at": _iso(at),
                "ends_at": _iso(at + timedelta(minutes=SLOT_MINUTES)),
                "price": {"amount": 45000, "currency": "CZK"},
            }
            for at in starts
        ]
        path = f"/v1/ops/spaces/{space.json()['space_id']}/slots"
        created = await api.call("POST", path, OPS, {"slots": new})
        assert created.status_code == 201, created.text
        slots += [str(slot["slot_id"]) for slot in created.json()]
    return slots


async def _wait_settled(journeys: Journeys, customer: Customer) -> None:
    """Every booking of the customer confirmed with an active PIN, and its two mails;
    fails naming what is missing of which booking."""

    async def settled() -> bool:
        return not await _missing(journeys, customer)

    try:
        await eventually(settled, SETTLED_WITHIN_S, every=1.0)
    except AssertionError:
        missing = await _missing(journeys, customer)
        raise AssertionError("not settled:\n" + "\n".join(missing)) from None


async def _missing(journeys: Journeys, customer: Customer) -> list[str]:
    missing = []
    for booking_id in customer.bookings:
        found = await journeys._booking(customer, booking_id)
        if found["state"] != "confirmed":
            missing.append(f"booking {booking_id}: {found['state']}, payment {found['payment']}")
            continue
        path = f"/v1/orgs/{customer.org.org_id}/bookings/{booking_id}/access"
        read = functools.partial(journeys.api.call, "GET", path, customer.org.owner)
        access = await _answered(read)
        if access.status_code != 200 or not access.json().get("pin"):
            missing.append(f"booking {booking_id}: no PIN: {access.status_code} {access.text}")
    mails, wanted = await _mails_to(journeys, customer.email), 2 * len(customer.bookings)
    assert mails <= wanted, f"{mails} mails to {customer.email} for {wanted}: one went twice"
    if mails < wanted:
        missing.append(f"{customer.email}: {mails} mails of {wanted}")
    return missing


async def _mails_to(journeys: Journeys, email: str) -> int:
    answer = await _answered(lambda: journeys.mail.get("/messages", params={"to": email}))
    answer.raise_for_status()
    return len(answer.json()["data"])


async def _last_seq(platform: Platform, service: str) -> int:
    async with database(platform, service) as db:
        row = await (await db.execute("SELECT coalesce(max(seq), 0) FROM outbox")).fetchone()
    assert row is not None
    return int(row[0])


async def _outbox_drained(platform: Platform, service: str, since: int) -> bool:
    async with database(platform, service) as db:
        query = "SELECT count(*) FROM outbox WHERE seq > %s AND state = 'pending'"
        row = await (await db.execute(query, (since,))).fetchone()
    return row is not None and row[0] == 0


async def _failed_rows(platform: Platform, service: str, since: int) -> list[str]:
    async with database(platform, service) as db:
        query = "SELECT event_type, last_error FROM outbox WHERE seq > %s AND state = 'failed'"
        rows = await (await db.execute(query, (since,))).fetchall()
    return [f"{service}: {event_type}: {error}" for event_type, error in rows]


class _LogMarks:
    """The services' log files as they stood when the test began: what was added since."""

    def __init__(self, folder: Path) -> None:
        self._files = {name: folder / f"{name}.log" for name in SERVICES}
        self._sizes = {name: _size(path) for name, path in self._files.items()}

    def added(self, name: str) -> list[str]:
        with self._files[name].open("rb") as log:
            log.seek(self._sizes[name])
            return log.read().decode(errors="replace").splitlines()

    def services_with(self, text: str) -> set[str]:
        return {name for name in SERVICES if any(text in line for line in self.added(name))}

    def lines_with(self, text: str) -> list[str]:
        return [line for name in SERVICES for line in self.added(name) if text in line]


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _iso(when: datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")
