"""Garbage at the gateway's door: each gets a problem body with a clear code, nothing is
booked, and the gateway goes on serving."""

from __future__ import annotations

from collections.abc import AsyncIterator

from tests.gateway.api import OPS, Api, new_key


async def test_garbage_bodies_and_ids_get_clear_problems_and_the_gateway_stays_up(
    api: Api,
) -> None:
    studio, org = await api.studio(1), await api.org()
    path = f"/v1/orgs/{org.org_id}/bookings"
    json_headers = {"content-type": "application/json"}

    huge = await api.call(
        "POST",
        path,
        org.owner,
        key=new_key(),
        content=b"[" + b"1," * 5_000_000 + b"1]",
        headers=json_headers,
    )
    assert (huge.status_code, huge.json()["code"]) == (413, "payload_too_large")

    async def chunks() -> AsyncIterator[bytes]:  # no length to check beforehand
        yield b"["
        for _ in range(100):
            yield b"1," * 50_000
        yield b"1]"

    streamed = await api.call(
        "POST", path, org.owner, key=new_key(), content=chunks(), headers=json_headers
    )
    assert (streamed.status_code, streamed.json()["code"]) == (413, "payload_too_large")
    for raw in (b"{", b"\xff\xfe\x00", b'{"slot_id": "x", "party_size": 1e999999}'):
        broken = await api.call(
            "POST", path, org.owner, key=new_key(), content=raw, headers=json_headers
        )
        assert broken.status_code in (400, 422), (raw, broken.text)
        assert broken.json()["code"] in ("malformed_json", "validation_error"), raw
    body: object
    for body in (
        [],
        "x",
        {"slot_id": studio.slot(0), "party_size": "1", "payment_mode": "card"},
        {"slot_id": studio.slot(0), "party_size": 9, "payment_mode": "cash"},
    ):
        invalid = await api.call("POST", path, org.owner, body, new_key())
        assert (invalid.status_code, invalid.json()["code"]) == (422, "validation_error"), body
        assert invalid.json()["errors"], body
    unknown_slot = await api.book(org, "not-a-slot-id")
    assert unknown_slot.status_code in (404, 422), unknown_slot.text
    for booking_id in ("..", "x" * 300, "%00", "00000000-0000-0000-0000-000000000000"):
        odd = await api.call("GET", f"{path}/{booking_id}", org.owner)
        assert (odd.status_code, odd.json()["code"]) == (404, "not_found"), booking_id
    slots = await api.call("GET", "/v1/spaces/not-a-space/slots", params={"from": "yesterday"})
    assert slots.status_code in (404, 422) and slots.json()["code"] in (
        "not_found",
        "validation_error",
    )
    ops = await api.call("POST", "/v1/ops/spaces", OPS, {"name": "x\x00", "timezone": "Mars/Base"})
    assert (ops.status_code, ops.json()["code"]) == (422, "validation_error")

    assert (await api.call("GET", path, org.owner)).json() == []
    assert (await api.call("GET", "/healthz")).status_code == 200
    assert (await api.call("GET", "/readyz")).status_code == 200
