"""Writes are limited per caller and per address, a booking's PIN reads per booking: past a
limit the answer is 429 `rate_limited` with `Retry-After`, for that caller, address or
booking alone, and the limit lets requests in again once its bucket has refilled."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from liftfit.access.v1 import access_pb2 as apb
from liftfit.booking.v1 import booking_pb2 as bpb

from gateway_bff.limits import Limits, LimitSettings
from gateway_bff.parts import Parts
from gateway_bff.throttle import Rate, TokenBuckets
from servicekit.config import SettingError
from tests.gateway.unit.edge import MemoryDirectory, TableUpstream, client_at, gateway, make_parts
from tests.support.waiting import eventually

PLENTY = Rate(per_minute=100_000, burst=100_000)
HERE, THERE = "192.0.2.10", "198.51.100.20"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_refuses_past_its_burst_and_says_when_a_token_is_back() -> None:
    clock = Clock()
    buckets = TokenBuckets(Rate(per_minute=6, burst=3), clock)  # a token every 10 s
    assert [buckets.take("anna").admitted for _ in range(4)] == [True, True, True, False]
    refused = buckets.take("anna")
    assert (refused.admitted, refused.retry_after_s, refused.refused_in_a_row) == (False, 10, 2)
    assert buckets.take("ben").admitted  # another key has a bucket of its own
    clock.now += 9.5
    assert buckets.take("anna").retry_after_s == 1  # half a second, said as a whole one
    clock.now += 0.5
    assert buckets.take("anna").admitted
    assert not buckets.take("anna").admitted


def test_idle_buckets_are_forgotten_and_the_number_kept_is_bounded() -> None:
    clock = Clock()
    buckets = TokenBuckets(Rate(per_minute=60, burst=2), clock, max_keys=100)
    for number in range(50):
        buckets.take(f"address-{number}")
    assert len(buckets) == 50
    clock.now += 2  # full again after 2 s: the same as no bucket at all
    buckets.take("late")
    assert len(buckets) == 1
    for number in range(500):
        buckets.take(f"flood-{number}")
    assert len(buckets) == 100


def test_the_limits_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEWAY_WRITES_PER_CALLER_PER_MINUTE", "7")
    monkeypatch.setenv("GATEWAY_WRITES_PER_CALLER_BURST", "3")
    monkeypatch.delenv("GATEWAY_WRITES_PER_ADDRESS_PER_MINUTE", raising=False)
    monkeypatch.delenv("GATEWAY_PIN_READS_PER_BOOKING_BURST", raising=False)
    read = LimitSettings.from_env()
    assert read.writes_per_caller == Rate(7, 3)
    assert read.writes_per_address == LimitSettings().writes_per_address
    monkeypatch.setenv("GATEWAY_PIN_READS_PER_BOOKING_BURST", "0")
    with pytest.raises(SettingError, match="GATEWAY_PIN_READS_PER_BOOKING_BURST"):
        LimitSettings.from_env()


def _parts(**rates: Rate) -> Parts:
    settings = LimitSettings(
        writes_per_caller=rates.get("caller", PLENTY),
        writes_per_address=rates.get("address", PLENTY),
        pin_reads_per_booking=rates.get("pins", PLENTY),
    )
    return make_parts(Limits(settings), MemoryDirectory())


@pytest.fixture
async def closing() -> AsyncIterator[list[Parts]]:
    made: list[Parts] = []
    yield made
    for parts in made:
        await parts.services.close()


async def _new_org(client: httpx.AsyncClient, user: str) -> httpx.Response:
    return await client.post("/v1/ops/orgs", json={"name": "Studio"}, headers={"X-Dev-User": user})


def _is_refusal(answer: httpx.Response) -> bool:
    return (
        answer.status_code == 429
        and answer.headers["content-type"] == "application/problem+json"
        and answer.json()["code"] == "rate_limited"
        and int(answer.headers["Retry-After"]) >= 1
    )


async def test_200_rapid_writes_of_one_caller_are_refused_past_the_limit_and_another_caller_writes(
    closing: list[Parts],
) -> None:
    parts = _parts(caller=Rate(per_minute=1, burst=20))
    closing.append(parts)
    app = gateway(parts)
    async with client_at(app, HERE) as client:
        writes = [_new_org(client, "ops") for _ in range(200)]
        # The other caller writes from the same address while the flood is on.
        *answers, other = await asyncio.gather(*writes[:150], _new_org(client, "ops2"))
        answers += await asyncio.gather(*writes[150:])
    statuses = [answer.status_code for answer in answers]
    assert statuses.count(201) == 20
    refused = [answer for answer in answers if answer.status_code != 201]
    assert len(refused) == 180 and all(_is_refusal(answer) for answer in refused)
    assert other.status_code == 201


async def test_past_an_addresses_limit_another_address_writes_and_reads_still_answer(
    closing: list[Parts],
) -> None:
    parts = _parts(address=Rate(per_minute=1, burst=10))
    closing.append(parts)
    app = gateway(parts)
    async with client_at(app, HERE) as here, client_at(app, THERE) as there:
        answers = [await _new_org(here, f"ops{'2' if n % 2 else ''}") for n in range(30)]
        assert [a.status_code for a in answers] == [201] * 10 + [429] * 20
        # Refused before anyone is asked who calls: a stranger's write from there too.
        assert _is_refusal(await here.post("/v1/ops/orgs", json={"name": "Studio"}))
        assert (await _new_org(there, "ops")).status_code == 201
        assert (await here.get("/v1/me", headers={"X-Dev-User": "ops"})).status_code == 200


async def test_the_providers_notification_is_never_refused_by_its_address(
    closing: list[Parts],
) -> None:
    parts = _parts(address=Rate(per_minute=1, burst=1))
    closing.append(parts)
    app = gateway(parts)
    async with client_at(app, HERE) as client:
        assert (await _new_org(client, "ops")).status_code == 201
        assert _is_refusal(await _new_org(client, "ops"))
        for _ in range(3):
            # No payment service answers here: what matters is that the gate let it pass.
            notified = await client.post(
                "/v1/payments/notifications", content=b"{}", headers={"Gateway-Signature": "x"}
            )
            assert notified.status_code != 429, notified.text


async def test_a_refused_caller_writes_again_once_the_bucket_has_refilled(
    closing: list[Parts],
) -> None:
    parts = _parts(caller=Rate(per_minute=20, burst=2))  # a token every 3 s
    closing.append(parts)
    app = gateway(parts)
    async with client_at(app, HERE) as client:
        assert [(await _new_org(client, "ops")).status_code for _ in range(2)] == [201, 201]
        refused = await _new_org(client, "ops")
        assert _is_refusal(refused) and 1 <= int(refused.headers["Retry-After"]) <= 3

        async def written() -> bool:
            return (await _new_org(client, "ops")).status_code == 201

        await eventually(written, within=10, every=0.2)


def _access(org_id: str, answers: dict[str, int]) -> TableUpstream:
    async def disclose(request: apb.DisclosePinRequest) -> apb.Access:
        answers[request.booking_id] = answers.get(request.booking_id, 0) + 1
        window = Timestamp(seconds=1_900_000_000)
        return apb.Access(
            booking_id=request.booking_id, state="active", pin="4821", valid_from=window
        )

    return TableUpstream("access", {apb.DisclosePinRequest: disclose})


def _booking(org_id: str) -> TableUpstream:
    async def found(request: bpb.GetBookingRequest) -> bpb.Booking:
        return bpb.Booking(booking_id=request.booking_id, org_id=org_id, state="confirmed")

    return TableUpstream("booking", {bpb.GetBookingRequest: found})


async def test_a_bookings_pin_reads_are_refused_past_the_limit_and_the_refusal_is_audited(
    closing: list[Parts],
) -> None:
    parts = _parts(pins=Rate(per_minute=12, burst=3))  # a read every 5 s
    closing.append(parts)
    org_id, booking, other = (str(uuid.uuid4()) for _ in range(3))
    directory = parts.directory
    assert isinstance(directory, MemoryDirectory)
    directory.add_member(org_id, "anna")
    disclosed: dict[str, int] = {}
    parts.services.upstreams["booking"] = _booking(org_id)
    parts.services.upstreams["access"] = _access(org_id, disclosed)
    app = gateway(parts)
    path = f"/v1/orgs/{org_id}/bookings/{{}}/access"
    anna = {"X-Dev-User": "anna"}
    async with client_at(app, HERE) as client:
        reads = [await client.get(path.format(booking), headers=anna) for _ in range(5)]
        assert [r.status_code for r in reads] == [200, 200, 200, 429, 429]
        assert reads[0].json()["pin"] == "4821"
        assert all(_is_refusal(r) for r in reads[3:])
        assert disclosed == {booking: 3}  # a refused read asks the access service nothing
        assert (await client.get(path.format(other), headers=anna)).status_code == 200

        async def read_again() -> bool:
            return (await client.get(path.format(booking), headers=anna)).status_code == 200

        await eventually(read_again, within=15, every=0.5)
    refusals = [entry for entry in directory.audit if entry[1] == "pin_read_refused"]
    assert [(actor, subject) for actor, _, subject, _ in refusals] == [("anna", booking)]
    assert refusals[0][3]["org_id"] == org_id


async def test_the_document_declares_429_with_retry_after_on_every_limited_operation(
    closing: list[Parts],
) -> None:
    parts = _parts()
    closing.append(parts)
    document: dict[str, Any] = gateway(parts).openapi()
    limited = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            answers = operation["responses"]
            write = method in ("post", "put", "patch", "delete") and path.startswith("/v1/")
            if write and path != "/v1/payments/notifications":
                assert "429" in answers, (method, path)
            if "429" in answers:
                assert "Retry-After" in answers["429"]["headers"]
                limited.append(operation["operationId"])
    assert "createBooking" in limited and "getAccess" in limited
    notification = document["paths"]["/v1/payments/notifications"]["post"]["responses"]
    assert "429" not in notification
