"""The contract's idempotency rules at the gateway, over HTTP on the whole platform."""

from __future__ import annotations

import asyncio
import json

from tests.gateway.api import Api, new_key


async def test_a_post_without_a_key_or_with_a_malformed_one_is_refused_and_books_nothing(
    api: Api,
) -> None:
    studio, org = await api.studio(1), await api.org()
    body = {"slot_id": studio.slot(0), "party_size": 1, "payment_mode": "card"}
    path = f"/v1/orgs/{org.org_id}/bookings"

    missing = await api.call("POST", path, org.owner, body)
    assert (missing.status_code, missing.json()["code"]) == (400, "idempotency_key_required")
    assert missing.headers["content-type"] == "application/problem+json"
    for bad in (b"", b"has space", b"x" * 129, "ключ".encode(), b"a/b"):
        malformed = await api.call("POST", path, org.owner, body, headers={"Idempotency-Key": bad})
        assert (malformed.status_code, malformed.json()["code"]) == (
            400,
            "invalid_idempotency_key",
        ), bad
    assert (await api.call("GET", path, org.owner)).json() == []


async def test_a_replay_with_the_same_body_in_another_key_order_answers_the_original(
    api: Api,
) -> None:
    studio, org = await api.studio(1), await api.org()
    key, path = new_key(), f"/v1/orgs/{org.org_id}/bookings"
    first = await api.call(
        "POST",
        path,
        org.owner,
        {"slot_id": studio.slot(0), "party_size": 1, "payment_mode": "card"},
        key,
    )
    assert first.status_code == 201, first.text
    assert "idempotent-replayed" not in first.headers
    # The same JSON value written otherwise: other key order, other white space.
    raw = f'{{ "payment_mode" : "card",\n  "party_size": 1, "slot_id":"{studio.slot(0)}" }}'
    again = await api.call(
        "POST",
        path,
        org.owner,
        key=key,
        content=raw.encode(),
        headers={"content-type": "application/json"},
    )
    assert again.status_code == 201, again.text
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json()["booking_id"] == first.json()["booking_id"]
    assert len((await api.call("GET", path, org.owner)).json()) == 1


async def test_the_same_key_with_another_body_is_a_conflict_and_changes_nothing(api: Api) -> None:
    studio, org = await api.studio(2), await api.org()
    key, path = new_key(), f"/v1/orgs/{org.org_id}/bookings"
    first = await api.book(org, studio.slot(0), key=key)
    assert first.status_code == 201, first.text

    other = await api.book(org, studio.slot(1), key=key)
    assert (other.status_code, other.json()["code"]) == (409, "idempotency_conflict")
    listed = (await api.call("GET", path, org.owner)).json()
    assert [b["booking_id"] for b in listed] == [first.json()["booking_id"]]
    slots = (await api.call("GET", f"/v1/spaces/{studio.space_id}/slots")).json()
    assert {s["slot_id"]: s["state"] for s in slots}[studio.slot(1)] == "available"


async def test_the_same_key_in_another_organisation_is_an_unrelated_request(api: Api) -> None:
    studio = await api.studio(2)
    first_org, second_org = await api.org(), await api.org()
    key = new_key()
    first = await api.book(first_org, studio.slot(0), key=key)
    second = await api.book(second_org, studio.slot(1), key=key)
    assert (first.status_code, second.status_code) == (201, 201), (first.text, second.text)
    assert "idempotent-replayed" not in second.headers
    assert first.json()["booking_id"] != second.json()["booking_id"]
    assert second.json()["org_id"] == second_org.org_id


async def test_twenty_concurrent_identical_requests_make_one_booking_and_twenty_equal_answers(
    api: Api,
) -> None:
    studio, org = await api.studio(1), await api.org()
    key = new_key()
    answers = await asyncio.gather(*(api.book(org, studio.slot(0), key=key) for _ in range(20)))
    assert {a.status_code for a in answers} == {201}, [a.text for a in answers]
    assert len({a.json()["booking_id"] for a in answers}) == 1
    assert sum(a.headers.get("idempotent-replayed") == "true" for a in answers) == 19
    listed = (await api.call("GET", f"/v1/orgs/{org.org_id}/bookings", org.owner)).json()
    assert len(listed) == 1


async def test_a_cancel_replayed_answers_the_cancelled_booking_again(api: Api) -> None:
    studio, org = await api.studio(1), await api.org()
    booking = (await api.book(org, studio.slot(0), mode="card")).json()
    path = f"/v1/orgs/{org.org_id}/bookings/{booking['booking_id']}/cancel"
    key = new_key()
    first = await api.call("POST", path, org.owner, {}, key)
    again = await api.call("POST", path, org.owner, json.loads("{ }"), key)
    assert (first.status_code, again.status_code) == (200, 200), (first.text, again.text)
    assert first.json()["state"] == again.json()["state"] == "cancelled"
    assert again.headers["idempotent-replayed"] == "true"
