"""A client of the gateway's HTTP API for tests: callers by name, and the set-up an
operator does before customers come (a studio with slots, an organisation with members)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

OPS = "ops"  # the operator of the local run (GATEWAY_OPERATORS)


@dataclass
class Studio:
    space_id: str
    slots: list[dict[str, Any]]

    def slot(self, index: int) -> str:
        return str(self.slots[index]["slot_id"])


@dataclass
class Org:
    org_id: str
    owner: str


class Api:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self.http = client

    @classmethod
    @contextlib.asynccontextmanager
    async def at(cls, base_url: str) -> AsyncIterator[Api]:
        async with httpx.AsyncClient(base_url=base_url, timeout=15) as client:
            yield cls(client)

    async def call(
        self,
        method: str,
        path: str,
        user: str | None = None,
        body: Any = None,
        key: str | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        headers = dict(kwargs.pop("headers", {}))
        if user is not None:
            headers["X-Dev-User"] = user
        if key is not None:
            headers["Idempotency-Key"] = key
        if body is not None:
            kwargs["json"] = body
        return await self.http.request(method, path, headers=headers, **kwargs)

    async def studio(
        self, slots: int = 3, hours_ahead: int = 1, timezone: str = "UTC", name: str = "Studio"
    ) -> Studio:
        space = await self.call("POST", "/v1/ops/spaces", OPS, {"name": name, "timezone": timezone})
        assert space.status_code == 201, space.text
        space_id = space.json()["space_id"]
        # Whole hours from the next one on, spaced apart: slots of one studio never overlap.
        first = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(
            hours=hours_ahead
        )
        new = [
            {
                "starts_at": _iso(first + timedelta(hours=2 * i)),
                "ends_at": _iso(first + timedelta(hours=2 * i, minutes=55)),
                "price": {"amount": 45000, "currency": "CZK"},
            }
            for i in range(slots)
        ]
        created = await self.call("POST", f"/v1/ops/spaces/{space_id}/slots", OPS, {"slots": new})
        assert created.status_code == 201, created.text
        return Studio(space_id, created.json())

    async def org(self, *members: str, email: str | None = None) -> Org:
        made = await self.call("POST", "/v1/ops/orgs", OPS, {"name": f"Org {uuid.uuid4().hex[:6]}"})
        assert made.status_code == 201, made.text
        org_id = made.json()["org_id"]
        names = members or (f"user-{uuid.uuid4().hex[:8]}",)
        for i, user in enumerate(names):
            member = {"user": user, "role": "owner" if i == 0 else "member", "locale": "en"}
            if email is not None:
                member["email"] = email
            added = await self.call("POST", f"/v1/ops/orgs/{org_id}/members", OPS, member)
            assert added.status_code == 201, added.text
        return Org(org_id, names[0])

    async def book(
        self, org: Org, slot_id: str, mode: str = "card", key: str | None = None
    ) -> httpx.Response:
        body = {"slot_id": slot_id, "party_size": 1, "payment_mode": mode}
        return await self.call(
            "POST", f"/v1/orgs/{org.org_id}/bookings", org.owner, body, key or new_key()
        )


def new_key() -> str:
    return f"k-{uuid.uuid4().hex}"


def _iso(when: datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")
