"""Demo data for a first visit, created through the operators' API of a running gateway,
the commands an operator would use: a studio with slots for the next 14 days, a pass plan
and a subscription plan, and an organisation with a member. It does nothing when the
catalogue has a studio already, so `make up` may run it every time.

Run: python -m gateway_bff.demo http://<gateway address> [operator]
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx

DAYS = 14
# A slot every hour round the clock: the studio opens with the booking's PIN, and the first
# slot is soon enough for its PIN to be shown on a first visit (access comes 2 h ahead).
SOON = timedelta(minutes=30)  # the first slot starts at least this late, at most 90 min
TIMEZONE = "Europe/Prague"
PRICE = {"amount": 45000, "currency": "CZK"}
MEMBER = "demo"  # sign in as this user (X-Dev-User) to book as the demo organisation
PLANS = (
    {"plan_code": "demo-pass-10", "kind": "pass", "name": "Ten entries", "entries": 10},
    {"plan_code": "demo-month", "kind": "subscription", "name": "A month", "period_days": 30},
)


# `make up` may run while a service restarts: the catalogue is asked again for this long.
READY_WITHIN_S = 60.0
ASK_EVERY_S = 1.0


class DemoFailed(Exception):
    pass


def slot_starts(now: datetime, zone: ZoneInfo) -> list[datetime]:
    """Whole hours, from the first at least SOON ahead, for DAYS days."""
    hour = (now + SOON).astimezone(zone).replace(minute=0, second=0, microsecond=0)
    first = hour + timedelta(hours=1)
    return [first + timedelta(hours=h) for h in range(DAYS * 24)]


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")


class Demo:
    def __init__(self, client: httpx.Client, operator: str) -> None:
        self.client = client
        self.headers = {"X-Dev-User": operator}

    def call(self, method: str, path: str, body: Any = None, expected: int = 201) -> Any:
        answer = self.client.request(method, path, json=body, headers=self.headers)
        if answer.status_code != expected:
            raise DemoFailed(f"{method} {path}: {answer.status_code} {answer.text[:300]}")
        return answer.json()

    def create(self) -> list[str]:
        if self.catalogue():
            return []  # the catalogue has studios: not an empty platform
        return [self._studio(), *self._plans(), self._organisation()]

    def catalogue(self) -> list[Any]:
        """The studios, once the gateway and booking answer: a 503 or a refused
        connection means a part is (re)starting, so the question is asked again."""
        deadline = time.monotonic() + READY_WITHIN_S
        while True:
            try:
                answer = self.client.get("/v1/spaces", headers=self.headers)
            except httpx.TransportError as error:
                if time.monotonic() > deadline:
                    raise DemoFailed(f"GET /v1/spaces: {error}") from error
            else:
                if answer.status_code == 200:
                    studios: list[Any] = answer.json()
                    return studios
                if answer.status_code != 503 or time.monotonic() > deadline:
                    raise DemoFailed(f"GET /v1/spaces: {answer.status_code} {answer.text[:300]}")
            time.sleep(ASK_EVERY_S)

    def _studio(self) -> str:
        space = self.call("POST", "/v1/ops/spaces", {"name": "Demo studio", "timezone": TIMEZONE})
        starts = slot_starts(datetime.now(UTC), ZoneInfo(TIMEZONE))
        slots = [
            {"starts_at": _iso(s), "ends_at": _iso(s + timedelta(minutes=55)), "price": PRICE}
            for s in starts
        ]
        self.call("POST", f"/v1/ops/spaces/{space['space_id']}/slots", {"slots": slots})
        return f"studio 'Demo studio' ({space['space_id']}) with {len(slots)} slots"

    def _plans(self) -> list[str]:
        for plan in PLANS:
            self.call("POST", "/v1/ops/plans", {"plan_version": 1, "price": PRICE, **plan})
        return [f"plan {plan['plan_code']} ({plan['kind']})" for plan in PLANS]

    def _organisation(self) -> str:
        org = self.call("POST", "/v1/ops/orgs", {"name": "Demo organisation"})
        member = {"user": MEMBER, "role": "owner", "email": "demo@liftfit.test", "locale": "cs"}
        self.call("POST", f"/v1/ops/orgs/{org['org_id']}/members", member)
        return f"organisation 'Demo organisation' with member '{MEMBER}'"


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    operator = argv[2] if len(argv) == 3 else "ops"
    try:
        with httpx.Client(base_url=argv[1], timeout=30) as client:
            made = Demo(client, operator).create()
    except (DemoFailed, httpx.HTTPError) as error:
        print(f"demo data: not created: {error}", file=sys.stderr)
        return 1
    if not made:
        print("demo data: the catalogue has studios already; nothing created")
    for line in made:
        print(f"demo data: {line}")
    if made:
        print(f"demo data: sign in as '{MEMBER}' to book, as '{operator}' for the console")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
