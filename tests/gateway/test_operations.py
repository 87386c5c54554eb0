"""The operators' API over HTTP, on the whole platform: a booking's timeline across the four
services, a failed effect replayed under a new dispatch generation and recorded in the audit
log, an incident resolved with its decision, and drift findings explained in words.

A failure is made where it would happen, in the owning service's database (an outbox row
the broker refused, an incident a job opened), since no HTTP call can cause one; everything
else goes through the gateway."""

from __future__ import annotations

import uuid
from typing import Any

from tests.gateway.api import OPS, Api
from tests.support.platform import Platform, database
from tests.support.waiting import eventually


async def _timeline(api: Api, booking_id: str) -> dict[str, Any]:
    answer = await api.call("GET", f"/v1/ops/bookings/{booking_id}/timeline", OPS)
    assert answer.status_code == 200, answer.text
    told: dict[str, Any] = answer.json()
    return told


async def _card_booking(api: Api) -> tuple[str, dict[str, Any]]:
    studio, org = await api.studio(1), await api.org()
    booked = await api.book(org, studio.slot(0), mode="card")
    assert booked.status_code == 201, booked.text
    return org.org_id, booked.json()


async def test_a_failed_effect_is_listed_replayed_under_a_new_generation_and_audited(
    api: Api, platform: Platform
) -> None:
    _, booking = await _card_booking(api)
    booking_id = booking["booking_id"]

    async with database(platform, "booking") as db:

        async def dispatched_request() -> str | None:
            row = await (
                await db.execute(
                    "SELECT effect_id FROM outbox WHERE key = %s AND state = 'dispatched'"
                    " AND event_type LIKE '%%PaymentRequested'",
                    (booking_id,),
                )
            ).fetchone()
            return str(row[0]) if row else None

        effect_id = await eventually(dispatched_request, 30)
        await db.execute(
            "UPDATE outbox SET state = 'failed', last_error = 'the broker refused it (test)'"
            " WHERE effect_id = %s",
            (effect_id,),
        )

    failed = await api.call("GET", "/v1/ops/outbox?service=booking&state=failed", OPS)
    assert failed.status_code == 200, failed.text
    assert effect_id in [row["effect_id"] for row in failed.json()["rows"]]
    told = await _timeline(api, booking_id)
    assert [e["effect_id"] for e in told["retry_safe"]] == [effect_id]
    assert told["retry_safe"][0]["replay"] == f"/v1/ops/outbox/booking/{effect_id}/replay"
    assert not told["settled"]

    replayed = await api.call(
        "POST",
        f"/v1/ops/outbox/booking/{effect_id}/replay",
        OPS,
        {"reason": "broker fixed, send it again"},
    )
    assert replayed.status_code == 202, replayed.text
    assert replayed.json() == {
        "service": "booking",
        "effect_id": effect_id,
        "dispatch_generation": 1,
    }

    async def out_again() -> dict[str, Any] | None:
        rows = (
            await api.call("GET", "/v1/ops/outbox?service=booking&state=dispatched", OPS)
        ).json()
        mine = [r for r in rows["rows"] if r["effect_id"] == effect_id]
        return mine[0] if mine and mine[0]["dispatch_generation"] == 1 else None

    await eventually(out_again, 30)
    audit = (await api.call("GET", f"/v1/ops/audit?subject={effect_id}", OPS)).json()["entries"]
    assert [(e["service"], e["action"], e["actor"]) for e in audit] == [
        ("booking", "replay_effect", OPS)
    ]
    assert "broker fixed" in audit[0]["detail_json"]
    # The payment service took the replayed event as the duplicate it is: still one payment.
    assert (await _timeline(api, booking_id))["retry_safe"] == []


async def test_an_incident_is_shown_on_the_timeline_resolved_once_and_audited(
    api: Api, platform: Platform
) -> None:
    org_id, booking = await _card_booking(api)
    booking_id = booking["booking_id"]

    async def payment_id() -> str | None:
        found = await api.call("GET", f"/v1/orgs/{org_id}/bookings/{booking_id}", booking["user"])
        payment = found.json()["payment"]
        return payment["payment_id"] if payment else None

    subject = await eventually(payment_id, 30)
    incident_id = str(uuid.uuid4())
    async with database(platform, "payment") as db:
        await db.execute(
            "INSERT INTO incidents (incident_id, kind, subject_id, detail)"
            " VALUES (%s, 'amount_mismatch', %s, 'gateway 1 CZK, snapshot 450 CZK (test)')",
            (incident_id, subject),
        )

    listed = (await api.call("GET", "/v1/ops/incidents?state=open", OPS)).json()["incidents"]
    assert incident_id in [i["incident_id"] for i in listed]
    told = await _timeline(api, booking_id)
    assert [(n["service"], n["incident_id"]) for n in told["needs_human"]] == [
        ("payment", incident_id)
    ]

    decision = {"decision": "refund by hand", "note": "called the customer"}
    path = f"/v1/ops/incidents/{incident_id}/resolve"
    first = await api.call("POST", path, OPS, decision)
    again = await api.call("POST", path, OPS, {"decision": "something else"})
    assert (first.status_code, again.status_code) == (200, 200), (first.text, again.text)
    assert first.json()["state"] == "resolved"
    assert first.json()["decision"] == again.json()["decision"] == "refund by hand"
    assert first.json()["resolved_by"] == OPS
    audit = (await api.call("GET", f"/v1/ops/audit?subject={incident_id}", OPS)).json()["entries"]
    assert [(e["service"], e["action"]) for e in audit] == [("payment", "resolve_incident")]
    assert (await _timeline(api, booking_id))["needs_human"] == []
    unknown = await api.call("POST", f"/v1/ops/incidents/{uuid.uuid4()}/resolve", OPS, decision)
    assert (unknown.status_code, unknown.json()["code"]) == (404, "not_found")


async def test_a_failed_refund_is_a_drift_finding_explained_in_words(
    api: Api, platform: Platform
) -> None:
    org_id, booking = await _card_booking(api)

    async def payment_id() -> str | None:
        found = await api.call(
            "GET", f"/v1/orgs/{org_id}/bookings/{booking['booking_id']}", booking["user"]
        )
        payment = found.json()["payment"]
        return payment["payment_id"] if payment else None

    subject = await eventually(payment_id, 30)
    async with database(platform, "payment") as db:
        await db.execute(
            "UPDATE payments SET state = 'refund_failed' WHERE payment_id = %s", (subject,)
        )

    findings = (await api.call("GET", "/v1/ops/drift", OPS)).json()
    assert findings["unavailable"] == []
    mine = [f for f in findings["findings"] if f["subject_id"] == subject]
    assert [(f["service"], f["kind"]) for f in mine] == [("payment", "refund_failed")]
    assert mine[0]["problem"] and mine[0]["truth"] and mine[0]["repair"]
    assert mine[0]["needs_human"] is True


async def test_an_unknown_booking_has_no_timeline(api: Api) -> None:
    for booking_id in (str(uuid.uuid4()), "nope"):
        answer = await api.call("GET", f"/v1/ops/bookings/{booking_id}/timeline", OPS)
        assert (answer.status_code, answer.json()["code"]) == (404, "not_found")


async def test_lag_names_every_services_consumer_group_and_outbox_backlog(
    api: Api, platform: Platform
) -> None:
    prefix = platform.env["TOPIC_PREFIX"]
    await _card_booking(api)  # something for every consumer to read

    async def every_group() -> dict[str, Any] | None:
        answer = await api.call("GET", "/v1/ops/lag", OPS)
        assert answer.status_code == 200, answer.text
        lag: dict[str, Any] = answer.json()
        groups = {g["group"] for g in lag["groups"]}
        wanted = {f"{prefix}{name}" for name in ("booking", "payment", "access", "notify")}
        return lag if wanted <= groups else None

    lag = await eventually(every_group, 30)
    assert [b["service"] for b in lag["backlog"]] == ["booking", "payment", "access", "notify"]
    assert all(b["dispatched"] > 0 for b in lag["backlog"] if b["service"] == "booking")
    for group in lag["groups"]:
        for partition in group["partitions"]:
            assert partition["topic"].startswith(prefix)
            assert partition["lag"] == partition["end"] - (partition["committed"] or 0)
    assert lag["unavailable"] == []
