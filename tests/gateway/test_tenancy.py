"""Tenancy and identity at the gate: every path of the OpenAPI document is tried, so a path
added later is held to the same rules without anyone remembering to add it here."""

from __future__ import annotations

import re
import uuid
from typing import Any

from tests.gateway.api import OPS, Api, new_key
from tests.support.waiting import eventually

_WRITES = {"post", "put", "patch", "delete"}


async def _operations(api: Api, prefix: str) -> list[tuple[str, str]]:
    document = (await api.call("GET", "/openapi.json")).json()
    found = [
        (method, path)
        for path, item in document["paths"].items()
        if path.startswith(prefix)
        for method in item
        if method in {"get", *_WRITES}
    ]
    assert found, prefix
    return found


def _filled(path: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: ids.get(m.group(1), str(uuid.uuid4())), path)


async def test_a_stranger_reads_and_writes_nothing_of_another_organisation(api: Api) -> None:
    studio = await api.studio(2)
    victim, stranger = await api.org(), await api.org()
    booked = await api.book(victim, studio.slot(0), mode="card")
    assert booked.status_code == 201, booked.text
    booking_id = booked.json()["booking_id"]
    ids = {"org_id": victim.org_id, "booking_id": booking_id, "order_id": str(uuid.uuid4())}
    bodies: dict[str, Any] = {
        "/v1/orgs/{org_id}/bookings": {
            "slot_id": studio.slot(1),
            "party_size": 1,
            "payment_mode": "card",
        },
        "/v1/orgs/{org_id}/bookings/{booking_id}/cancel": {},
        "/v1/orgs/{org_id}/bookings/{booking_id}/reschedule": {"slot_id": studio.slot(1)},
        "/v1/orgs/{org_id}/orders": {"plan_code": "pass-10", "plan_version": 1},
    }

    for method, path in await _operations(api, "/v1/orgs/"):
        body = bodies.get(path, {}) if method in _WRITES else None
        key = new_key() if method in _WRITES else None
        answer = await api.call(method.upper(), _filled(path, ids), stranger.owner, body, key)
        assert (answer.status_code, answer.json()["code"]) == (404, "not_found"), (method, path)
        assert answer.headers["content-type"] == "application/problem+json"

    # Nothing changed: the victim's booking is still pending and the other slot still free.
    mine = await api.call("GET", f"/v1/orgs/{victim.org_id}/bookings/{booking_id}", victim.owner)
    assert mine.json()["state"] == "pending"
    listed = await api.call("GET", f"/v1/orgs/{victim.org_id}/bookings", victim.owner)
    assert [b["booking_id"] for b in listed.json()] == [booking_id]
    slots = (await api.call("GET", f"/v1/spaces/{studio.space_id}/slots")).json()
    assert {s["slot_id"]: s["state"] for s in slots}[studio.slot(1)] == "available"


async def test_an_unknown_organisation_looks_exactly_like_someone_elses(api: Api) -> None:
    victim, stranger = await api.org(), await api.org()
    for org_id in (victim.org_id, str(uuid.uuid4()), "not-a-uuid"):
        answer = await api.call("GET", f"/v1/orgs/{org_id}/bookings", stranger.owner)
        assert answer.status_code == 404
        assert answer.json() == {
            "type": "about:blank",
            "title": "Not found",
            "status": 404,
            "code": "not_found",
            "detail": "no such organisation among yours",
        }


async def test_a_member_who_is_no_operator_gets_403_on_every_operators_path(api: Api) -> None:
    org = await api.org()
    for method, path in await _operations(api, "/v1/ops/"):
        body: dict[str, Any] | None = {} if method in _WRITES else None
        answer = await api.call(method.upper(), _filled(path, {}), org.owner, body)
        assert (answer.status_code, answer.json()["code"]) == (403, "forbidden"), (method, path)
    # and the operator passes the same gate
    assert (await api.call("GET", "/v1/ops/audit", OPS)).status_code == 200


async def test_no_identity_is_401_on_every_organisation_and_operators_path(api: Api) -> None:
    org = await api.org()
    operations = await _operations(api, "/v1/orgs/") + await _operations(api, "/v1/ops/")
    for method, path in operations:
        body: dict[str, Any] | None = {} if method in _WRITES else None
        answer = await api.call(method.upper(), _filled(path, {"org_id": org.org_id}), None, body)
        assert (answer.status_code, answer.json()["code"]) == (401, "unauthenticated"), (
            method,
            path,
        )
        for empty in ("", "u" * 201):
            again = await api.call(
                method.upper(), _filled(path, {"org_id": org.org_id}), headers={"X-Dev-User": empty}
            )
            assert again.status_code == 401, (method, path, empty)


async def test_a_new_member_is_let_in_at_once(api: Api) -> None:
    org = await api.org()
    newcomer = f"new-{uuid.uuid4().hex[:6]}"
    path = f"/v1/orgs/{org.org_id}/bookings"
    assert (await api.call("GET", path, newcomer)).status_code == 404
    added = await api.call(
        "POST", f"/v1/ops/orgs/{org.org_id}/members", OPS, {"user": newcomer, "role": "member"}
    )
    assert added.status_code == 201, added.text

    async def admitted() -> bool:
        return (await api.call("GET", path, newcomer)).status_code == 200

    await eventually(admitted, 5)
