"""The soak's customers: many at once, over the public HTTP API only, each choosing its next
journey with `random.Random(seed + its number)`, so a seed replays the same choices.

A journey is a few operations: a card checkout paid on the card sandbox's hosted page or
left for its hold to run out, a cancellation before or after payment, a pass bought and
booked with, a move to another slot after the PIN was read, the PIN read and tried at the
lock sandbox's door, a checkout sent again under its Idempotency-Key, several customers
racing for one slot, a card notification delivered to the gateway again. Every request and
its answer becomes one line of the history (chaos.history) with the ids the answer named.

A customer never stops on an answer it did not expect: it records it and goes on. A 5xx
or no answer at all is recorded, then the request is sent again with the same
Idempotency-Key (the answer may have been lost after the platform acted), a few times at
most; then the customer leaves that journey. Only cancellation stops a customer.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import httpx

from benchmarks.customers import (
    Customer,
    Sandboxes,
    Slot,
    SlotSupply,
    StepFailed,
    access_active,
    booking_while_waiting,
    pay_on_hosted_page,
    payment_link,
)
from chaos.history import NO_ANSWER, HistoryWriter, Kind, Operation
from sandboxes.card_gateway.signing import HEADER, sign
from tests.gateway.api import new_key

TRIES = 3  # a request with no answer or a 5xx: sent this often under one key at most
TRY_AGAIN_AFTER_S = 0.5  # times the tries so far
WAIT_S = 60.0  # how long a customer waits for a change it expects (a link, a confirmation)
POLL_S = 0.5
RACERS = 3  # customers racing for one slot
LOST_ANSWER_SHARE = 0.15  # of the POSTs answered, sent again as if the answer was lost
THINK_S = (0.5, 2.0)  # a customer's pause between journeys
HOSTED_PAGE_PAID = 303  # the page sends the browser back once the payment is taken


class Journey(StrEnum):
    CARD_PAID = "card_paid"
    CARD_LEFT_TO_EXPIRE = "card_left_to_expire"
    CANCEL_BEFORE_PAYMENT = "cancel_before_payment"
    CANCEL_AFTER_PAYMENT = "cancel_after_payment"
    SAME_KEY_AGAIN = "same_key_again"
    RACE_FOR_ONE_SLOT = "race_for_one_slot"
    PASS_BOUGHT_AND_BOOKED = "pass_bought_and_booked"
    RESCHEDULE_AFTER_PIN = "reschedule_after_pin"
    NOTIFICATION_AGAIN = "card_notification_again"


# How often each journey is chosen, relative to the others.
WEIGHTS: Mapping[Journey, int] = {
    Journey.CARD_PAID: 6,
    Journey.CARD_LEFT_TO_EXPIRE: 2,
    Journey.CANCEL_BEFORE_PAYMENT: 2,
    Journey.CANCEL_AFTER_PAYMENT: 2,
    Journey.SAME_KEY_AGAIN: 2,
    Journey.RACE_FOR_ONE_SLOT: 2,
    Journey.PASS_BOUGHT_AND_BOOKED: 2,
    Journey.RESCHEDULE_AFTER_PIN: 2,
    Journey.NOTIFICATION_AGAIN: 1,
}


def choose(rng: random.Random) -> Journey:
    """The next journey, drawn by WEIGHTS."""
    return rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()))[0]


def journeys(seed: int, customer: int, count: int) -> list[Journey]:
    """The first `count` journeys customer number `customer` chooses under `seed`."""
    rng = random.Random(seed + customer)
    return [choose(rng) for _ in range(count)]


@dataclass(frozen=True)
class Plan:
    """The pass plan customers buy."""

    code: str
    version: int


@dataclass
class Shop:
    """What every customer shares: the slots not yet taken, the pass plan, the sandboxes,
    the history, and the card notifications' signing secrets (the card gateway's own)."""

    slots: SlotSupply
    plan: Plan
    sandboxes: Sandboxes
    card_control: httpx.AsyncClient  # the card gateway's /_sandbox, with its control token
    history: HistoryWriter
    webhook_secrets: list[str]
    customers: list[Customer] = field(default_factory=list)
    broken: Counter[str] = field(default_factory=Counter)  # journeys the workload broke off

    def record(self, who: Customer, kind: Kind, status: int, **ids: str | None) -> None:
        operation = Operation(
            datetime.now(UTC), who.org.owner, kind, status, org_id=who.org.org_id, **ids
        )
        self.history.write(operation)


Answer = httpx.Response | None  # None: no answer came


async def ask(request: Callable[[], Awaitable[httpx.Response]]) -> Answer:
    try:
        return await request()
    except httpx.HTTPError:  # a reset, a time-out, a refused connection
        return None


def status_of(answer: Answer) -> int:
    return NO_ANSWER if answer is None else answer.status_code


def body_of(answer: Answer) -> dict[str, Any]:
    """The answer's JSON object, {} for anything else."""
    if answer is None:
        return {}
    try:
        body = answer.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def text(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    return value if isinstance(value, str) and value else None


def worth_again(answer: Answer) -> bool:
    """No answer, or the platform's own failure: the request may have been acted on."""
    return answer is None or answer.status_code >= 500


class Shopper:
    """One customer of the soak, choosing journeys until cancelled."""

    def __init__(self, number: int, seed: int, who: Customer, shop: Shop) -> None:
        self.number = number
        self.rng = random.Random(seed + number)
        self.who = who
        self.shop = shop
        self.path = f"/v1/orgs/{who.org.org_id}"
        self.left: list[str] = []  # bookings left unpaid, oldest first

    async def run(self) -> None:
        while True:
            journey = choose(self.rng)
            try:
                await self.go(journey)
            except (StepFailed, httpx.HTTPError, ValueError, KeyError, TypeError):
                pass  # an answer nobody expected: recorded where it came, go on
            except Exception as broken:  # the workload's own mistake: counted, never fatal
                self.shop.broken[f"{journey.value}: {type(broken).__name__}: {broken}"[:200]] += 1
            await asyncio.sleep(self.rng.uniform(*THINK_S))

    async def go(self, journey: Journey) -> None:
        match journey:
            case Journey.CARD_PAID:
                await self.paid_booking()
            case Journey.CARD_LEFT_TO_EXPIRE:
                left = await self.checkout(Kind.CHECKOUT_CARD, "card")
                if left is not None:
                    self.left.append(left[0])
            case Journey.CANCEL_BEFORE_PAYMENT if self.left and self.rng.random() < 0.3:
                await self.cancel(self.left.pop(0))  # its hold may have run out: a 409 then
            case Journey.CANCEL_BEFORE_PAYMENT:
                booking = await self.checkout(Kind.CHECKOUT_CARD, "card")
                if booking is not None:
                    await self.cancel(booking[0])
            case Journey.CANCEL_AFTER_PAYMENT:
                paid = await self.paid_booking()
                if paid is not None:
                    await self.cancel(paid[0])
            case Journey.SAME_KEY_AGAIN:
                await self.same_key_again()
            case Journey.RACE_FOR_ONE_SLOT:
                await self.race()
            case Journey.PASS_BOUGHT_AND_BOOKED:
                await self.pass_booking()
            case Journey.RESCHEDULE_AFTER_PIN:
                paid = await self.paid_booking()
                if paid is not None:
                    await self.reschedule(paid[0])
            case Journey.NOTIFICATION_AGAIN:
                paid = await self.paid_booking(see_door=False)
                if paid is not None:
                    await self.notify_again(paid[1])

    # Operations: each request recorded with its answer

    async def post(
        self, kind: Kind, path: str, body: dict[str, Any], key: str | None = None, **ids: str
    ) -> tuple[Answer, str]:
        """The POST under one key, sent again while no answer or a 5xx comes, and now and
        then once more whatever came, as a client that lost the answer does; each try
        recorded with the ids its answer named (those of `ids` when it named none)."""
        key = key or new_key()
        answer: Answer = None
        for tried in range(1, TRIES + 1):
            try:
                answer = await ask(
                    lambda: self.who.api.call("POST", path, self.who.org.owner, body, key)
                )
            except asyncio.CancelledError:
                # The soak's end cut the request off after it was sent: the platform may
                # have acted on it, which the auditor must be able to tell from the history.
                named_ids = {n: ids[n] for n in ("booking_id", "order_id") if n in ids}
                slot_id = ids.get("slot_id")
                self.shop.record(self.who, kind, NO_ANSWER, key=key, slot_id=slot_id, **named_ids)
                raise
            named = body_of(answer)
            found = {
                name: text(named, name) or ids.get(name)
                for name in ("booking_id", "order_id")
                if text(named, name) or ids.get(name)
            }
            slot = named.get("slot")
            slot_id = (text(slot, "slot_id") if isinstance(slot, dict) else None) or ids.get(
                "slot_id"
            )
            self.shop.record(self.who, kind, status_of(answer), key=key, slot_id=slot_id, **found)
            lost = tried == 1 and self.rng.random() < LOST_ANSWER_SHARE
            if not (worth_again(answer) or lost) or tried == TRIES:
                break
            await asyncio.sleep(TRY_AGAIN_AFTER_S * tried)
        return answer, key

    async def checkout(
        self, kind: Kind, mode: str, slot: Slot | None = None, key: str | None = None
    ) -> tuple[str, Slot] | None:
        """A booking of a free slot (or of `slot`): its id and slot, None when refused."""
        slot = slot or self.shop.slots.take()
        if slot is None:
            return None
        body = {"slot_id": slot.slot_id, "party_size": 1, "payment_mode": mode}
        answer, _ = await self.post(kind, f"{self.path}/bookings", body, key, slot_id=slot.slot_id)
        booking_id = text(body_of(answer), "booking_id")
        if answer is None or answer.status_code != 201 or booking_id is None:
            return None
        return booking_id, slot

    async def booking(
        self, booking_id: str, wanted: Callable[[dict[str, Any]], bool]
    ) -> dict[str, Any] | None:
        """The booking once `wanted` holds for it, None when it does not within WAIT_S."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            found = await booking_while_waiting(self.who.api, self.who.org, booking_id)
            if found is not None and wanted(found):
                return found
            await asyncio.sleep(POLL_S)
        return None

    async def pay(self, url: str, booking_id: str | None = None) -> str:
        """Pays on the hosted page; the card gateway's id of the payment."""
        charge_id = url.rstrip("/").rsplit("/", 1)[-1]
        cards = self.shop.sandboxes
        status = HOSTED_PAGE_PAID
        try:
            await pay_on_hosted_page(cards.card, cards.card_url, url)
        except StepFailed as refused:
            first = refused.detail.split(" ", 1)[0]
            status = int(first) if first.isdigit() else 409  # the page had no Pay button
        except httpx.HTTPError:
            status = NO_ANSWER
        # The page's redirect after taking the money is its success: recorded as accepted.
        recorded = 200 if status == HOSTED_PAGE_PAID else status
        self.shop.record(self.who, Kind.PAY, recorded, payment_id=charge_id, booking_id=booking_id)
        if status != HOSTED_PAGE_PAID:
            raise StepFailed("pay", f"the hosted page answered {status}")
        return charge_id

    async def paid_booking(self, see_door: bool = True) -> tuple[str, str, Slot] | None:
        """A card booking paid and confirmed, its PIN read and tried at the door: the
        booking, the card gateway's payment id and the slot; None where it stopped."""
        booking = await self.checkout(Kind.CHECKOUT_CARD, "card")
        if booking is None:
            return None
        booking_id, slot = booking
        found = await self.booking(booking_id, lambda b: payment_link(b) is not None)
        url = payment_link(found) if found else None
        if url is None:
            return None
        charge_id = await self.pay(url, booking_id)
        if see_door and await self.booking(booking_id, access_active) is not None:
            pin = await self.read_pin(booking_id)
            if pin is not None:
                await self.try_door(booking_id, slot, pin)
        return booking_id, charge_id, slot

    async def read_pin(self, booking_id: str) -> str | None:
        """The PIN, asked until it is shown; a read that showed none discloses nothing, so
        only a read with the PIN, or a refusal, is recorded. A 404 is the access not made
        yet (a moved booking's new grant): asked again."""
        deadline = time.monotonic() + WAIT_S
        path = f"{self.path}/bookings/{booking_id}/access"
        while time.monotonic() < deadline:
            answer = await ask(lambda: self.who.api.call("GET", path, self.who.org.owner))
            pin = text(body_of(answer), "pin")
            if pin is not None:
                self.shop.record(self.who, Kind.READ_PIN, 200, booking_id=booking_id)
                return pin
            if answer is not None and answer.status_code not in (200, 404, 503):
                self.shop.record(self.who, Kind.READ_PIN, answer.status_code, booking_id=booking_id)
                return None
            await asyncio.sleep(POLL_S)
        return None

    async def try_door(self, booking_id: str, slot: Slot, pin: str) -> None:
        door = {"device_id": slot.device, "pin": pin, "at": slot.starts_at}
        answer = await ask(lambda: self.shop.sandboxes.lock.post("/_sandbox/door", json=door))
        self.shop.record(
            self.who, Kind.TRY_DOOR, status_of(answer), booking_id=booking_id, slot_id=slot.slot_id
        )

    async def cancel(self, booking_id: str) -> None:
        path = f"{self.path}/bookings/{booking_id}/cancel"
        await self.post(Kind.CANCEL, path, {}, booking_id=booking_id)

    async def reschedule(self, booking_id: str) -> None:
        slot = self.shop.slots.take()
        if slot is None:
            return
        path = f"{self.path}/bookings/{booking_id}/reschedule"
        answer, _ = await self.post(
            Kind.RESCHEDULE, path, {"slot_id": slot.slot_id}, booking_id=booking_id
        )
        moved = answer is not None and answer.status_code == 200
        if not moved or self.rng.random() < 0.5:
            return
        if await self.booking(booking_id, access_active) is not None:
            pin = await self.read_pin(booking_id)
            if pin is not None:
                await self.try_door(booking_id, slot, pin)

    async def same_key_again(self) -> None:
        """A checkout whose answer was 'lost': the same request under the same key, once
        or twice more, each answer recorded; then paid or not."""
        slot = self.shop.slots.take()
        if slot is None:
            return
        key = new_key()
        booking = None
        for _ in range(1 + self.rng.randint(1, 2)):
            booking = await self.checkout(Kind.CHECKOUT_CARD, "card", slot, key) or booking
        if booking is not None and self.rng.random() < 0.5:
            found = await self.booking(booking[0], lambda b: payment_link(b) is not None)
            if found is not None and (url := payment_link(found)):
                await self.pay(url, booking[0])

    async def race(self) -> None:
        """This customer and others check out one slot at the same moment; the platform
        holds it for one of them, who pays."""
        slot = self.shop.slots.take()
        others = [c for c in self.shop.customers if c is not self.who]
        if slot is None:
            return
        racers = [self, *(Shopper(self.number, 0, c, self.shop) for c in self._some(others))]
        won = await asyncio.gather(*(r.checkout(Kind.CHECKOUT_CARD, "card", slot) for r in racers))
        for racer, booking in zip(racers, won, strict=True):
            if booking is None:
                continue
            found = await racer.booking(booking[0], lambda b: payment_link(b) is not None)
            if found is not None and (url := payment_link(found)):
                await racer.pay(url, booking[0])

    def _some(self, others: Sequence[Customer]) -> list[Customer]:
        return self.rng.sample(list(others), min(RACERS - 1, len(others)))

    async def pass_booking(self) -> None:
        """A pass bought and paid, then a slot booked with one of its entries."""
        plan = {"plan_code": self.shop.plan.code, "plan_version": self.shop.plan.version}
        answer, _ = await self.post(Kind.BUY_PASS, f"{self.path}/orders", plan)
        order_id = text(body_of(answer), "order_id")
        if answer is None or answer.status_code != 201 or order_id is None:
            return
        url = await self.order_link(order_id)
        if url is None:
            return
        await self.pay(url)
        if not await self.has_entries():
            return
        booking = await self.checkout(Kind.CHECKOUT_PASS, "pass")
        if booking is not None and await self.booking(booking[0], access_active) is not None:
            pin = await self.read_pin(booking[0]) if self.rng.random() < 0.5 else None
            if pin is not None:
                await self.try_door(booking[0], booking[1], pin)

    async def order_link(self, order_id: str) -> str | None:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            answer = await ask(
                lambda: self.who.api.call(
                    "GET", f"{self.path}/orders/{order_id}", self.who.org.owner
                )
            )
            payment = body_of(answer).get("payment")
            url = text(payment, "checkout_url") if isinstance(payment, dict) else None
            if url is not None:
                return url
            await asyncio.sleep(POLL_S)
        return None

    async def has_entries(self) -> bool:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            answer = await ask(
                lambda: self.who.api.call("GET", f"{self.path}/passes", self.who.org.owner)
            )
            balance = body_of(answer).get("balance")
            if isinstance(balance, int) and balance > 0:
                return True
            await asyncio.sleep(POLL_S)
        return False

    async def notify_again(self, charge_id: str) -> None:
        """The card gateway's notifications of the payment, delivered to the platform again
        (signed as the card gateway signs them) two or three times over."""
        control = self.shop.card_control
        log = await ask(lambda: control.get("/_sandbox/notifications"))
        entries = body_of(log).get("data") or []
        events = [
            e["event"]
            for e in entries
            if isinstance(e, dict)
            and isinstance(e.get("event"), dict)
            and (e["event"].get("data") or {}).get("payment_id") == charge_id
        ]
        if not events:
            return
        body = json.dumps(events[-1], separators=(",", ":")).encode()
        for _ in range(self.rng.randint(2, 3)):
            answer = await ask(lambda: self.deliver(body))
            self.shop.record(self.who, Kind.NOTIFY_AGAIN, status_of(answer), payment_id=charge_id)

    async def deliver(self, body: bytes) -> httpx.Response:
        signature = sign(body, self.shop.webhook_secrets, int(time.time()))
        headers = {HEADER: signature, "Content-Type": "application/json"}
        return await self.who.api.http.post(
            "/v1/payments/notifications", content=body, headers=headers
        )


async def run_workload(seed: int, shop: Shop) -> None:
    """Every customer of the shop choosing journeys until cancelled."""
    shoppers = [Shopper(n, seed, who, shop) for n, who in enumerate(shop.customers)]
    await asyncio.gather(*(s.run() for s in shoppers))
