"""The operators' endpoints the console needs beside the contract's, on the whole platform:
a slot closed and repriced (what the slots API answers changes, and the gateway's audit log
says who did it), the organisations listed with their members, and a booking's trace read
from Jaeger as spans of several services. Each is for operators only."""

from __future__ import annotations

import uuid
from typing import Any

from opentelemetry.instrumentation.utils import suppress_instrumentation

from tests.gateway.api import OPS, Api
from tests.observability.journey import booked_paid_and_active
from tests.support.waiting import eventually


async def _slots(api: Api, space_id: str) -> dict[str, dict[str, Any]]:
    listed = await api.call("GET", f"/v1/spaces/{space_id}/slots")
    assert listed.status_code == 200, listed.text
    return {slot["slot_id"]: slot for slot in listed.json()}


async def test_an_operator_closes_and_reprices_slots_and_the_slots_api_says_so(api: Api) -> None:
    studio = await api.studio(3)
    closed, repriced, booked = studio.slot(0), studio.slot(1), studio.slot(2)

    answer = await api.call("POST", f"/v1/ops/slots/{closed}/close", OPS)
    assert (answer.status_code, answer.json()["state"]) == (200, "closed"), answer.text
    price = {"amount": 52000, "currency": "CZK"}
    answer = await api.call("POST", f"/v1/ops/slots/{repriced}/price", OPS, {"price": price})
    assert (answer.status_code, answer.json()["price"]) == (200, price), answer.text

    slots = await _slots(api, studio.space_id)
    assert slots[closed]["state"] == "closed"
    assert slots[repriced]["price"] == price and slots[repriced]["state"] == "available"
    audit = (await api.call("GET", f"/v1/ops/audit?subject={repriced}", OPS)).json()["entries"]
    assert [(e["service"], e["action"], e["actor"]) for e in audit] == [
        ("gateway", "set_slot_price", OPS)
    ]

    org = await api.org()
    assert (await api.book(org, booked)).status_code == 201
    refused = await api.call("POST", f"/v1/ops/slots/{booked}/close", OPS)
    assert (refused.status_code, refused.json()["code"]) == (409, "slot_unavailable")


async def test_closing_or_pricing_is_for_operators_and_known_slots_only(api: Api) -> None:
    studio = await api.studio(1)
    slot = studio.slot(0)
    price = {"price": {"amount": 1, "currency": "CZK"}}
    stranger = await api.call("POST", f"/v1/ops/slots/{slot}/close", "someone")
    assert (stranger.status_code, stranger.json()["code"]) == (403, "forbidden")
    stranger = await api.call("POST", f"/v1/ops/slots/{slot}/price", "someone", price)
    assert stranger.status_code == 403
    for unknown in (str(uuid.uuid4()), "nope"):
        missing = await api.call("POST", f"/v1/ops/slots/{unknown}/close", OPS)
        assert (missing.status_code, missing.json()["code"]) == (404, "not_found")
    bad = await api.call("POST", f"/v1/ops/slots/{slot}/price", OPS, {"price": {"amount": 0}})
    assert (bad.status_code, bad.json()["code"]) == (422, "validation_error")
    assert (await _slots(api, studio.space_id))[slot]["state"] == "available"


async def test_organisations_are_listed_newest_first_with_their_members(api: Api) -> None:
    older = await api.org()
    owner, member = f"owner-{uuid.uuid4().hex[:6]}", f"member-{uuid.uuid4().hex[:6]}"
    newer = await api.org(owner, member)
    listed = await api.call("GET", "/v1/ops/orgs", OPS)
    assert listed.status_code == 200, listed.text
    ids = [org["org_id"] for org in listed.json()]
    assert ids.index(newer.org_id) < ids.index(older.org_id)
    [shown] = [org for org in listed.json() if org["org_id"] == newer.org_id]
    assert [(m["user"], m["role"]) for m in shown["members"]] == [
        (owner, "owner"),
        (member, "member"),
    ]
    stranger = await api.call("GET", "/v1/ops/orgs", newer.owner)
    assert (stranger.status_code, stranger.json()["code"]) == (403, "forbidden")


async def test_a_bookings_trace_is_read_from_jaeger_as_spans_of_several_services(
    api: Api,
) -> None:
    with suppress_instrumentation():  # the test's own calls start no trace of their own
        studio, org = await api.studio(1), await api.org()
        booking = await booked_paid_and_active(api, org, studio.slot(0))
        told = await api.call("GET", f"/v1/ops/bookings/{booking['booking_id']}/timeline", OPS)
        trace_id = told.json()["trace_id"]

        async def several_services() -> dict[str, Any] | None:
            answer = await api.call("GET", f"/v1/ops/traces/{trace_id}", OPS)
            if answer.status_code != 200:
                return None
            found: dict[str, Any] = answer.json()
            services = {span["service"] for span in found["spans"]}
            return found if {"gateway", "booking", "payment"} <= services else None

        trace = await eventually(several_services, 60, every=0.5)
    spans = trace["spans"]
    assert trace["trace_id"] == trace_id
    assert [s["start_us"] for s in spans] == sorted(s["start_us"] for s in spans)
    ids = {s["span_id"] for s in spans}
    assert any(s["parent_id"] in ids for s in spans)
    missing = await api.call("GET", f"/v1/ops/traces/{uuid.uuid4().hex}", OPS)
    assert (missing.status_code, missing.json()["code"]) == (404, "not_found")
    stranger = await api.call("GET", f"/v1/ops/traces/{trace_id}", org.owner)
    assert stranger.status_code == 403
