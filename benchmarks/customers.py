"""Customers of the studio over the public HTTP API only, as a browser sees the platform:
one customer's card saga, and many customers in a loop, closed (each customer starts its
next saga once the last one has ended) or open (sagas arrive at a fixed rate by the clock,
whether or not the earlier ones have ended).

A saga: check out a slot by card, wait for the payment link, pay on the card sandbox's
hosted page, wait until the booking is confirmed with its access active, read the PIN once,
try it at the lock sandbox's door for the slot's window, and wait for the confirmation mail
in the mail sandbox (found by its Message-ID, which notify derives from the booking and the
address). A step that fails names itself; a saga records the failure instead of raising, so
the loop goes on, and `audit` decides afterwards whether the saga was lost. Used by
`make bench-saga` (benchmarks/saga.py) and by the card journey of `make deploy-local`
(tests/k8s/card_journey.py); a chaos soak can run the same loops while it breaks things.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx

from services.notify.domain.model import Template, delivery_key, message_id
from tests.gateway.api import Api, Org, new_key
from tests.support.sandboxes import REPO_ROOT, SandboxAuth

T = TypeVar("T")
PLATFORM_ENV = REPO_ROOT / "deploy/local/platform.env"
SETTLED_WITHIN_S = 120.0  # each step's bound
CHECKOUT_TRIES = 3  # a 503 or a lost answer: the same key again, as the web pages do
TRY_AGAIN_AFTER_S = 0.5  # times the tries so far


class StepFailed(Exception):
    """A step of a customer's saga did not happen as it should; `step` names it."""

    def __init__(self, step: str, detail: str) -> None:
        super().__init__(f"{step}: {detail}")
        self.step = step
        self.detail = detail


def expect(answer: httpx.Response, status: int, step: str) -> None:
    if answer.status_code != status:
        raise StepFailed(step, f"{answer.status_code} {answer.text[:300]}")


def json_object(answer: httpx.Response, step: str) -> dict[str, Any]:
    """The answer's body as a JSON object, else StepFailed."""
    try:
        body = answer.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise StepFailed(step, f"not a JSON object: {answer.text[:300]!r}")
    return body


async def within(
    step: str, check: Callable[[], Awaitable[T | None]], seconds: float, every: float
) -> T:
    """The first truthy result of `check`, asked every `every` s; StepFailed after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        result = await check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise StepFailed(step, f"not within {seconds:.0f} s (last answer: {result!r})")
        await asyncio.sleep(every)


def iso(when: datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")


def local_setting(name: str, settings: Path = PLATFORM_ENV) -> str:
    """A setting of the local run: the environment's, else deploy/local/platform.env's."""
    if os.environ.get(name):
        return os.environ[name]
    for line in settings.read_text().splitlines():
        key, _, value = line.partition("=")
        if key == name:
            return value.strip()
    return ""


def control_auth(setting: str) -> SandboxAuth:
    """A sandbox's control token (e.g. LOCK_PROVIDER_CONTROL_TOKEN) as a bearer token."""
    return SandboxAuth(control_token=local_setting(setting))


# The gateway's answers


async def check_out(api: Api, org: Org, slot_id: str) -> dict[str, Any]:
    """The card checkout; a 503 or a lost answer is tried again with the same key."""
    key = new_key()
    for tried in range(1, CHECKOUT_TRIES + 1):
        try:
            answer = await api.book(org, slot_id, key=key)
        except httpx.TransportError as lost:
            if tried == CHECKOUT_TRIES:
                raise StepFailed("checkout", f"no answer: {lost!r}") from None
            await asyncio.sleep(TRY_AGAIN_AFTER_S * tried)
            continue
        if answer.status_code == 503 and tried < CHECKOUT_TRIES:
            await asyncio.sleep(TRY_AGAIN_AFTER_S * tried)
            continue
        expect(answer, 201, "checkout")
        return booking_body(answer, "checkout")
    raise AssertionError("unreachable")


async def read_booking(api: Api, org: Org, booking_id: str) -> dict[str, Any]:
    answer = await api.call("GET", f"/v1/orgs/{org.org_id}/bookings/{booking_id}", org.owner)
    expect(answer, 200, "booking read")
    return booking_body(answer, "booking read")


async def booking_while_waiting(api: Api, org: Org, booking_id: str) -> dict[str, Any] | None:
    """The booking, or None while the gateway says to try again (503: a service did not
    answer in time) or gives no answer: a customer waiting for a change asks again."""
    try:
        answer = await api.call("GET", f"/v1/orgs/{org.org_id}/bookings/{booking_id}", org.owner)
    except httpx.TransportError:
        return None
    if answer.status_code == 503:
        return None
    expect(answer, 200, "booking read")
    return booking_body(answer, "booking read")


def booking_body(answer: httpx.Response, step: str) -> dict[str, Any]:
    body = json_object(answer, step)
    if not isinstance(body.get("booking_id"), str):
        raise StepFailed(step, f"not a booking: {answer.text[:300]}")
    return body


def payment_link(booking: dict[str, Any]) -> str | None:
    payment = booking.get("payment") or {}
    url = payment.get("checkout_url") if isinstance(payment, dict) else None
    return url if isinstance(url, str) and url else None


def confirmed(booking: dict[str, Any]) -> bool:
    return booking.get("state") == "confirmed"


def access_active(booking: dict[str, Any]) -> bool:
    access = booking.get("access") or {}
    return confirmed(booking) and isinstance(access, dict) and access.get("state") == "active"


async def read_pin(api: Api, org: Org, booking_id: str) -> str | None:
    """The PIN while the access is active (each read is recorded, and limited per booking)."""
    path = f"/v1/orgs/{org.org_id}/bookings/{booking_id}/access"
    answer = await api.call("GET", path, org.owner)
    pin = json_object(answer, "PIN readable").get("pin") if answer.status_code == 200 else None
    return pin if isinstance(pin, str) and pin.isdigit() else None


# The sandboxes


@dataclass(frozen=True)
class Sandboxes:
    """HTTP clients of the three providers' sandboxes: the card gateway's hosted pages
    (`card`, its base URL `card_url`), the lock (with the control token) and the mails."""

    card: httpx.AsyncClient
    card_url: str
    lock: httpx.AsyncClient
    mail: httpx.AsyncClient


async def pay_on_hosted_page(card: httpx.AsyncClient, card_url: str, url: str) -> None:
    """What the customer does on the payment page: open it and press Pay. Only a page of
    the card sandbox this run knows is opened."""
    prefix = card_url.rstrip("/") + "/checkout/"
    payment_id = url.removeprefix(prefix)
    if not url.startswith(prefix) or not payment_id.replace("_", "").isalnum():
        raise StepFailed("payment page", f"not a page of the card sandbox: {url[:200]!r}")
    page = await card.get(f"/checkout/{payment_id}")
    expect(page, 200, "payment page")
    if f'action="/checkout/{payment_id}"' not in page.text:
        raise StepFailed("payment page", "no Pay button: the payment is not pending")
    paid = await card.post(f"/checkout/{payment_id}", data={"outcome": "succeed"})
    expect(paid, 303, "pay on the hosted page")


async def door_opens(lock: httpx.AsyncClient, device: str, pin: str, at: str) -> bool:
    """Whether the PIN opens the studio's door at `at` (the slot's start)."""
    tried = await lock.post("/_sandbox/door", json={"device_id": device, "pin": pin, "at": at})
    expect(tried, 200, "door")
    return json_object(tried, "door").get("opens") is True


def confirmation_id(booking_id: str, email: str) -> str:
    """The Message-ID of the booking's confirmation mail (notify's stable delivery key)."""
    return message_id(delivery_key(f"booking:{booking_id}", Template.BOOKING_CONFIRMED, email))


async def confirmation_mail(mail: httpx.AsyncClient, booking_id: str, email: str) -> bool:
    found = await mail.get("/messages", params={"message_id": confirmation_id(booking_id, email)})
    expect(found, 200, "mail")
    messages = json_object(found, "mail").get("data")
    return isinstance(messages, list) and any(
        isinstance(m, dict)
        and email in (m.get("rcpt_tos") or [])
        and booking_id in str(m.get("text") or "")
        for m in messages
    )


async def lock_codes(lock: httpx.AsyncClient) -> list[dict[str, Any]]:
    """Every code the lock sandbox has had, removed ones included, with its history."""
    answer = await lock.get("/_sandbox/access_codes")
    expect(answer, 200, "lock codes")
    codes = json_object(answer, "lock codes").get("data")
    if not isinstance(codes, list):
        raise StepFailed("lock codes", "no list of codes")
    return [code for code in codes if isinstance(code, dict)]


# Sagas


@dataclass(frozen=True)
class Slot:
    slot_id: str
    device: str  # the studio's lock
    starts_at: str  # ISO 8601 in UTC, as the API takes it
    ends_at: str


@dataclass
class Customer:
    api: Api
    org: Org
    email: str


@dataclass
class Saga:
    """One customer's checkout and what became of it; times are wall-clock seconds
    (time.time()), comparable with the sandboxes' own records."""

    customer: int
    slot: Slot
    due: float  # when it was meant to start: its POST (closed loop), its arrival (open)
    posted: float = 0.0
    booking_id: str = ""
    paid: float = 0.0
    pin_seen: float = 0.0  # the door opened with it
    ended: float = 0.0  # the confirmation mail was there
    failed_step: str = ""
    failure: str = ""
    step: str = "checkout"  # the step under way

    @property
    def completed(self) -> bool:
        return self.ended > 0 and not self.failed_step


@dataclass
class Pace:
    """How often a customer asks again while it waits, and how long it waits at most."""

    poll_s: float = 0.25
    within_s: float = SETTLED_WITHIN_S


async def run_saga(customer: Customer, sandboxes: Sandboxes, saga: Saga, pace: Pace) -> Saga:
    """The whole saga; a failed step is recorded in `saga`, never raised."""
    try:
        await _saga(customer, sandboxes, saga, pace)
    except StepFailed as failed:
        saga.failed_step, saga.failure = failed.step, failed.detail
    except httpx.HTTPError as lost:  # no answer, or a broken one
        saga.failed_step, saga.failure = saga.step, repr(lost)[:300]
    return saga


async def _saga(customer: Customer, sandboxes: Sandboxes, saga: Saga, pace: Pace) -> None:
    api, org = customer.api, customer.org
    saga.posted = time.time()
    saga.booking_id = (await check_out(api, org, saga.slot.slot_id))["booking_id"]

    async def link() -> str | None:
        booking = await booking_while_waiting(api, org, saga.booking_id)
        return payment_link(booking) if booking else None

    saga.step = "payment link"
    url = await within(saga.step, link, pace.within_s, pace.poll_s)
    saga.step = "pay on the hosted page"
    await pay_on_hosted_page(sandboxes.card, sandboxes.card_url, url)
    saga.paid = time.time()

    async def active() -> bool:
        booking = await booking_while_waiting(api, org, saga.booking_id)
        return booking is not None and access_active(booking)

    saga.step = "confirmed with access"
    await within(saga.step, active, pace.within_s, pace.poll_s)
    saga.step = "PIN readable"
    pin = await within(
        saga.step, lambda: read_pin(api, org, saga.booking_id), pace.within_s, pace.poll_s
    )
    slot = saga.slot
    saga.step = "PIN at the lock"
    await within(
        saga.step,
        lambda: door_opens(sandboxes.lock, slot.device, pin, slot.starts_at),
        pace.within_s,
        pace.poll_s,
    )
    saga.pin_seen = time.time()
    saga.step = "confirmation mail"
    await within(
        saga.step,
        lambda: confirmation_mail(sandboxes.mail, saga.booking_id, customer.email),
        pace.within_s,
        pace.poll_s,
    )
    saga.ended = time.time()


class SlotSupply:
    """Free slots handed out one at a time; `ran_out` once one was asked for and none left."""

    def __init__(self, slots: Iterable[Slot]) -> None:
        self._left = deque(slots)
        self.ran_out = False

    def take(self) -> Slot | None:
        if not self._left:
            self.ran_out = True
            return None
        return self._left.popleft()

    def __len__(self) -> int:
        return len(self._left)


async def closed_loop(
    customers: Sequence[Customer],
    sandboxes: Sandboxes,
    slots: SlotSupply,
    seconds: float,
    pace: Pace,
) -> list[Saga]:
    """Each customer starts sagas one after the other until `seconds` have passed; the
    sagas under way then are waited for. Every started saga is in the result."""
    deadline = time.monotonic() + seconds
    sagas: list[Saga] = []

    async def customer_loop(number: int, customer: Customer) -> None:
        while time.monotonic() < deadline and (slot := slots.take()) is not None:
            saga = Saga(number, slot, due=time.time())
            sagas.append(saga)
            await run_saga(customer, sandboxes, saga, pace)

    await asyncio.gather(*(customer_loop(n, c) for n, c in enumerate(customers)))
    return sagas


def arrivals(rate: float, seconds: float) -> list[float]:
    """When sagas are due, in seconds from the start: one every 1/rate s by the clock."""
    if rate <= 0 or seconds <= 0:
        return []
    return [i / rate for i in range(math.ceil(seconds * rate - 1e-9))]


@dataclass
class OpenLoop:
    sagas: list[Saga]
    worst_lateness_s: float  # how far behind the clock this process started a saga


async def open_loop(
    customers: Sequence[Customer],
    sandboxes: Sandboxes,
    slots: SlotSupply,
    rate: float,
    seconds: float,
    pace: Pace,
) -> OpenLoop:
    """Sagas arrive at `rate` per second for `seconds`, taking the customers in turn, each
    started at its time whatever the earlier ones are doing; then all are waited for. A
    saga's `due` is its arrival time, so latencies measured from it include any delay of
    this process in starting it."""
    start, wall = time.monotonic(), time.time()
    tasks: list[asyncio.Task[Saga]] = []
    lateness = 0.0
    for number, offset in enumerate(arrivals(rate, seconds)):
        await asyncio.sleep(max(0.0, start + offset - time.monotonic()))
        lateness = max(lateness, time.monotonic() - start - offset)
        slot = slots.take()
        if slot is None:
            break
        who = number % len(customers)
        saga = Saga(who, slot, due=wall + offset)
        tasks.append(asyncio.create_task(run_saga(customers[who], sandboxes, saga, pace)))
    return OpenLoop(list(await asyncio.gather(*tasks)), lateness)


# What became of the sagas


@dataclass(frozen=True)
class Verdict:
    """A saga's end: `confirmed` (with the PIN set at the lock and the confirmation mail),
    `expired` (and no code of it left at the lock), or `lost` (anything else, said in
    `detail`). `pin_active_at`: when the lock set its code, by the lock's own clock."""

    saga: Saga
    outcome: str
    detail: str = ""
    pin_active_at: float | None = None

    @property
    def lost(self) -> bool:
        return self.outcome == "lost"


Window = tuple[str, datetime, datetime]  # the device and the code's window


def _window(device: object, starts_at: object, ends_at: object) -> Window | None:
    try:
        return (str(device), _parsed(starts_at), _parsed(ends_at))
    except (TypeError, ValueError):
        return None


def _parsed(when: object) -> datetime:
    if not isinstance(when, str):
        raise TypeError(when)
    return datetime.fromisoformat(when.replace("Z", "+00:00"))


def codes_by_window(codes: Iterable[dict[str, Any]]) -> dict[Window, list[dict[str, Any]]]:
    """The lock's codes by device and window: one slot of a studio is one window."""
    found: dict[Window, list[dict[str, Any]]] = {}
    for code in codes:
        window = _window(code.get("device_id"), code.get("starts_at"), code.get("ends_at"))
        if window is not None:
            found.setdefault(window, []).append(code)
    return found


def set_at(code: dict[str, Any]) -> float | None:
    """When the lock set the code (its status history), as wall-clock seconds."""
    for entry in code.get("status_history") or []:
        if isinstance(entry, dict) and entry.get("status") == "set":
            try:
                return _parsed(entry.get("at")).timestamp()
            except (TypeError, ValueError):
                return None
    return None


def slot_window(slot: Slot) -> Window:
    window = _window(slot.device, slot.starts_at, slot.ends_at)
    assert window is not None, f"a slot of this run has no valid window: {slot}"
    return window


async def audit(
    sagas: Sequence[Saga], customers: Sequence[Customer], sandboxes: Sandboxes, pace: Pace
) -> list[Verdict]:
    """Every saga's end. A saga that did not finish in its loop is given `pace.within_s`
    more to end confirmed or expired; its booking is found by its slot when the checkout's
    answer was lost."""
    unfinished = [saga for saga in sagas if not saga.completed]
    settled = await asyncio.gather(*(_settle(customers[s.customer], s, pace) for s in unfinished))
    states = {id(saga): state for saga, state in zip(unfinished, settled, strict=True)}
    codes = codes_by_window(await lock_codes(sandboxes.lock))
    verdicts = []
    for saga in sagas:
        at_lock = codes.get(slot_window(saga.slot), [])
        live = [code for code in at_lock if code.get("status") in ("setting", "set")]
        pin_at = next((t for t in map(set_at, at_lock) if t is not None), None)
        if saga.completed:
            verdicts.append(_completed(saga, live, pin_at))
            continue
        verdicts.append(
            await _unfinished(saga, states[id(saga)], live, pin_at, customers, sandboxes)
        )
    return verdicts


def _completed(saga: Saga, live: list[dict[str, Any]], pin_at: float | None) -> Verdict:
    if len(live) != 1 or pin_at is None:
        return Verdict(saga, "lost", f"confirmed, but {len(live)} live codes at the lock")
    return Verdict(saga, "confirmed", pin_active_at=pin_at)


async def _unfinished(
    saga: Saga,
    state: dict[str, Any] | None,
    live: list[dict[str, Any]],
    pin_at: float | None,
    customers: Sequence[Customer],
    sandboxes: Sandboxes,
) -> Verdict:
    stopped = f"stopped at {saga.failed_step or 'nothing'}: {saga.failure[:200]}"
    if state is None:
        return Verdict(saga, "lost", f"no booking for its slot; {stopped}")
    if not state:
        return Verdict(saga, "lost", f"its booking could not be read; {stopped}")
    if state.get("state") == "expired":
        if live:
            return Verdict(saga, "lost", f"expired with {len(live)} live codes at the lock")
        return Verdict(saga, "expired", stopped)
    email = customers[saga.customer].email
    settled = access_active(state) and len(live) == 1 and pin_at is not None
    if settled and await confirmation_mail(sandboxes.mail, saga.booking_id, email):
        return Verdict(saga, "confirmed", f"late; {stopped}", pin_at)
    return Verdict(saga, "lost", f"{state.get('state')}, {len(live)} live codes; {stopped}")


async def _settle(customer: Customer, saga: Saga, pace: Pace) -> dict[str, Any] | None:
    """The saga's booking once it is confirmed with access or expired, else as it was last
    read ({} when it could not be); None when the organisation has no booking of its slot."""
    try:
        return await _settled(customer, saga, pace)
    except (StepFailed, httpx.HTTPError, ValueError):  # ValueError: a body that is not JSON
        return {}


async def _settled(customer: Customer, saga: Saga, pace: Pace) -> dict[str, Any] | None:
    api, org = customer.api, customer.org
    if not saga.booking_id:
        listed = await api.call("GET", f"/v1/orgs/{org.org_id}/bookings", org.owner)
        expect(listed, 200, "audit: bookings")
        mine = [
            b["booking_id"]
            for b in listed.json()
            if isinstance(b, dict)
            and isinstance(b.get("slot"), dict)
            and b["slot"].get("slot_id") == saga.slot.slot_id
            and isinstance(b.get("booking_id"), str)
        ]
        if not mine:
            return None
        saga.booking_id = mine[0]
    last: dict[str, Any] = {}

    async def ended() -> bool:
        nonlocal last
        last = await booking_while_waiting(api, org, saga.booking_id) or last
        return access_active(last) or last.get("state") == "expired"

    with contextlib.suppress(StepFailed, httpx.HTTPError):  # judged as it was last read
        await within("audit", ended, pace.within_s, max(pace.poll_s, 1.0))
    return last
