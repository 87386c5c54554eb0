"""The card gateway's notifications arrive at the gateway, which hands the raw body and the
signature to the payment service: a bad or stale signature is refused and changes nothing,
and a well-signed body that lies changes nothing either, since the payment is re-read from
the card gateway before any state changes."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from typing import Any

from tests.gateway.api import Api, Org
from tests.support.platform import Platform
from tests.support.waiting import eventually

PATH = "/v1/payments/notifications"


def _signed(body: bytes, secret: str, at: int) -> str:
    digest = hmac.new(secret.encode(), f"{at}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={at},v1={digest}"


def _claiming_paid(provider_payment_id: str) -> bytes:
    event = {
        "id": f"evt_{uuid.uuid4().hex}",
        "type": "payment.succeeded",
        "created": int(time.time()),
        "data": {"payment_id": provider_payment_id, "reference": "forged", "state": "succeeded"},
    }
    return json.dumps(event).encode()


async def _pending_card_booking(api: Api) -> tuple[Org, str, str]:
    """A card booking whose payment is open: its organisation, id and checkout URL."""
    studio, org = await api.studio(1), await api.org()
    booked = await api.book(org, studio.slot(0), mode="card")
    assert booked.status_code == 201, booked.text
    booking_id = booked.json()["booking_id"]

    async def checkout_url() -> str | None:
        found = await api.call("GET", f"/v1/orgs/{org.org_id}/bookings/{booking_id}", org.owner)
        payment = found.json()["payment"]
        return payment["checkout_url"] if payment else None

    url = await eventually(checkout_url, 60)
    return org, booking_id, url


def _provider_id(checkout_url: str) -> str:
    """The card gateway's id of the payment: the last part of its checkout URL."""
    return checkout_url.rstrip("/").rsplit("/", 1)[1]


async def _booking(api: Api, org: Org, booking_id: str) -> dict[str, Any]:
    found = await api.call("GET", f"/v1/orgs/{org.org_id}/bookings/{booking_id}", org.owner)
    answer: dict[str, Any] = found.json()
    return answer


async def test_a_bad_or_stale_signature_is_400_invalid_signature_and_changes_nothing(
    api: Api, platform: Platform
) -> None:
    org, booking_id, checkout_url = await _pending_card_booking(api)
    provider_id = _provider_id(checkout_url)
    body = _claiming_paid(provider_id)
    secret = platform.env["CARD_GATEWAY_WEBHOOK_SECRETS"].split(",")[0]
    now = int(time.time())
    for header in (
        None,
        "",
        f"t={now},v1={'0' * 64}",
        _signed(body, "whsec_not_ours", now),
        _signed(body, secret, now - 3600),  # stale: beyond the tolerance
        _signed(body + b" ", secret, now)[:-1] + "0",
        "t=abc,v1=" + "f" * 64,
    ):
        headers = {"content-type": "application/json"}
        if header is not None:
            headers["Gateway-Signature"] = header
        answer = await api.call("POST", PATH, content=body, headers=headers)
        assert (answer.status_code, answer.json()["code"]) == (400, "invalid_signature"), header
    booking = await _booking(api, org, booking_id)
    assert booking["state"] == "pending"
    assert booking["payment"]["state"] == "pending"


async def test_a_well_signed_lie_changes_nothing_the_card_gateway_does_not_confirm(
    api: Api, platform: Platform
) -> None:
    org, booking_id, checkout_url = await _pending_card_booking(api)
    provider_id = _provider_id(checkout_url)
    body = _claiming_paid(provider_id)
    secret = platform.env["CARD_GATEWAY_WEBHOOK_SECRETS"].split(",")[0]
    answer = await api.call(
        "POST",
        PATH,
        content=body,
        headers={"Gateway-Signature": _signed(body, secret, int(time.time()))},
    )
    # Accepted: the payment service re-read the payment from the card gateway, which says
    # it is still unpaid, before answering.
    assert answer.status_code == 200, answer.text
    booking = await _booking(api, org, booking_id)
    assert booking["state"] == "pending"
    assert booking["payment"]["state"] == "pending"


async def test_a_body_over_64_kib_is_refused_before_it_is_read_whole(api: Api) -> None:
    answer = await api.call(
        "POST", PATH, content=b"{" + b" " * (64 * 1024) + b"}", headers={"Gateway-Signature": "t=1"}
    )
    assert (answer.status_code, answer.json()["code"]) == (413, "payload_too_large")


async def test_the_return_page_shows_the_state_and_changes_nothing(api: Api) -> None:
    org, booking_id, _ = await _pending_card_booking(api)
    payment_id = (await _booking(api, org, booking_id))["payment"]["payment_id"]
    page = await api.call("GET", "/v1/payments/return", params={"payment_id": payment_id})
    assert page.status_code == 200
    assert "data-state='pending'" in page.text
    for odd in ("not-an-id", str(uuid.uuid4()), "<script>"):
        other = await api.call("GET", "/v1/payments/return", params={"payment_id": odd})
        assert other.status_code == 200 and "data-state='unknown'" in other.text
        assert "<script>" not in other.text
    assert (await _booking(api, org, booking_id))["payment"]["state"] == "pending"
