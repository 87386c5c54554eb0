"""A customer's card journey against a running platform, over HTTP only: what
`make deploy-local` asks of the pods the kubelet runs.

An operator makes a studio with a slot inside access's lead time (so the door code is made
at once) and an organisation with a member; the member checks out by card through the
gateway; the card sandbox's hosted page is paid; then, each within a bound: the booking
is confirmed, its PIN is readable through the gateway, the lock sandbox holds that PIN for
the slot's window, and the mail sandbox has the confirmation and the access mail.

Run: python -m tests.k8s.card_journey NAME [--gateway URL] [--card URL] [--lock URL]
[--mail URL]. It prints each step with its time and exits 1 naming the first that failed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from benchmarks.customers import (
    SETTLED_WITHIN_S,
    check_out,
    confirmed,
    control_auth,
    expect,
    iso,
    read_booking,
    read_pin,
    within,
)
from benchmarks.customers import StepFailed as JourneyFailed
from tests.gateway.api import Api, Org

MAILS = 2  # the confirmation and the access mail
DEVICE = "studio-a-door"  # the local run's default lock (ACCESS_DEFAULT_DEVICE)


class Journey:
    def __init__(
        self,
        name: str,
        api: Api,
        card: httpx.AsyncClient,
        lock: httpx.AsyncClient,
        mail: httpx.AsyncClient,
    ) -> None:
        self.name, self.api, self.card, self.lock, self.mail = name, api, card, lock, mail
        self.email = f"k8s-{name}-{uuid.uuid4().hex[:8]}@example.test"
        self.started = time.monotonic()

    def said(self, what: str) -> None:
        print(f"  {self.name}: {what} ({time.monotonic() - self.started:.1f} s)", flush=True)

    async def run(self) -> None:
        slot_id, window = await self._slot()
        org = await self.api.org(email=self.email)
        booking_id = await self._checkout(org, slot_id)
        await self._pay(org, booking_id)
        await self._step("confirmed", lambda: self._confirmed(org, booking_id))
        pin = await self._step("PIN readable", lambda: self._pin(org, booking_id))
        await self._step("PIN at the lock", lambda: self._at_lock(pin, window))
        await self._step("mails", self._mails)

    async def _slot(self) -> tuple[str, tuple[str, str]]:
        starts = datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(minutes=10)
        studio = {"name": f"K8s {self.name}", "timezone": "UTC"}
        space = await self._step("studio", lambda: self._new_studio(studio))
        window = (iso(starts), iso(starts + timedelta(minutes=30)))
        new = {
            "starts_at": window[0],
            "ends_at": window[1],
            "price": {"amount": 45000, "currency": "CZK"},
        }
        path = f"/v1/ops/spaces/{space.json()['space_id']}/slots"
        created = await self.api.call("POST", path, "ops", {"slots": [new]})
        expect(created, 201, "slot")
        self.said(f"studio and slot at {window[0]}")
        return str(created.json()[0]["slot_id"]), window

    async def _new_studio(self, studio: dict[str, str]) -> httpx.Response | None:
        """The first write after a pod was replaced may be told to try again (503): a
        client does, and a studio more is harmless here."""
        answer = await self.api.call("POST", "/v1/ops/spaces", "ops", studio)
        if answer.status_code == 503:
            return None
        expect(answer, 201, "studio")
        return answer

    async def _checkout(self, org: Org, slot_id: str) -> str:
        booking_id = str((await check_out(self.api, org, slot_id))["booking_id"])
        self.said(f"checked out booking {booking_id}")
        return booking_id

    async def _pay(self, org: Org, booking_id: str) -> None:
        async def link() -> str | None:
            payment = (await self._booking(org, booking_id)).get("payment") or {}
            return payment.get("checkout_url")

        url = await self._step("payment link", link)
        provider_id = url.rsplit("/", 1)[1]
        settled = await self.card.post(
            f"/_sandbox/payments/{provider_id}/settle", json={"outcome": "succeed"}
        )
        expect(settled, 200, "payment on the hosted page")
        self.said("paid on the card sandbox")

    async def _confirmed(self, org: Org, booking_id: str) -> bool:
        return confirmed(await self._booking(org, booking_id))

    async def _pin(self, org: Org, booking_id: str) -> str | None:
        return await read_pin(self.api, org, booking_id)

    async def _at_lock(self, pin: str, window: tuple[str, str]) -> bool:
        codes = (await self.lock.get("/_sandbox/access_codes")).json()["data"]
        return any(
            code["code"] == pin
            and code["device_id"] == DEVICE
            and (code["starts_at"], code["ends_at"]) == window
            and code["status"] in ("setting", "set")
            for code in codes
        )

    async def _mails(self) -> bool:
        found = (await self.mail.get("/messages", params={"to": self.email})).json()["data"]
        return len(found) >= MAILS

    async def _booking(self, org: Org, booking_id: str) -> dict[str, Any]:
        return await read_booking(self.api, org, booking_id)

    async def _step(self, what: str, check: Callable[[], Awaitable[Any]]) -> Any:
        result = await within(what, check, SETTLED_WITHIN_S, every=0.5)
        self.said(what)
        return result


async def main(arguments: argparse.Namespace) -> None:
    async with (
        Api.at(arguments.gateway) as api,
        httpx.AsyncClient(
            base_url=arguments.card, auth=control_auth("CARD_GATEWAY_CONTROL_TOKEN"), timeout=15
        ) as card,
        httpx.AsyncClient(
            base_url=arguments.lock, auth=control_auth("LOCK_PROVIDER_CONTROL_TOKEN"), timeout=15
        ) as lock,
        httpx.AsyncClient(base_url=arguments.mail, timeout=15) as mail,
    ):
        await Journey(arguments.name, api, card, lock, mail).run()


def parsed(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="a name for this journey in the output")
    parser.add_argument("--gateway", default="http://127.0.0.1:18080")
    parser.add_argument("--card", default="http://127.0.0.1:18081")
    parser.add_argument("--lock", default="http://127.0.0.1:18082")
    parser.add_argument("--mail", default="http://127.0.0.1:18083")
    return parser.parse_args(argv)


if __name__ == "__main__":
    print("card journey:", flush=True)
    try:
        asyncio.run(main(parsed(sys.argv[1:])))
    except (JourneyFailed, httpx.HTTPError, AssertionError) as failed:
        print(f"card journey FAILED: {type(failed).__name__}: {failed}", file=sys.stderr)
        sys.exit(1)
    print("card journey: passed")
