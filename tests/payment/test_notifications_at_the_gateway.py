"""The card gateway's notifications at the HTTP gateway: refused cheaply when they cannot be
used, and never lost when the database or the card gateway is away.

The gateway runs in this process (tests/support/notification_entry.py), so its memory is
this process's resident set; the big bodies are sent by curl from a file, so the client
side holds none of them here.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from urllib.parse import urlsplit

import grpc
import pytest

from services.payment.domain.signature import sign
from tests.payment.harness import SECRETS, Harness, eventually, notification_body
from tests.support.infrastructure import start_postgres, stop_postgres

MB = 1024 * 1024
OUTAGE_ROUNDS = 2  # refusals the hint retrier meets before the card gateway is back
SETTLED_WITHIN_S = 30.0


def _memory(field: str) -> int:
    """VmRSS (resident now) or VmHWM (the peak since the last reset), in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/self/status")


def _reset_peak() -> None:
    # A body read whole and freed leaves VmRSS where it was; only the peak shows it.
    Path("/proc/self/clear_refs").write_text("5")


def _file_of(path: Path, size: int) -> Path:
    with path.open("wb") as out:
        for _ in range(size // MB):
            out.write(b"x" * MB)
        out.write(b"x" * (size % MB))
    return path


async def _curl(url: str, body: Path, *headers: str) -> int:
    """POSTs the file's bytes as they are read; returns the HTTP status."""
    args = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "60"]
    for header in ("Content-Type: application/json", "Expect:", *headers):
        args += ["-H", header]
    process = await asyncio.create_subprocess_exec(
        *args, "--data-binary", f"@{body}", url, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()
    return int(out or b"0")


def _signature_of_now() -> str:
    """Well formed and recent: only the body's size can be what is wrong."""
    return f"Gateway-Signature: {sign(b'', SECRETS, int(time.time()))}"


async def test_a_ten_megabyte_body_gets_413_and_costs_the_gateway_no_memory(
    harness: Harness, tmp_path: Path
) -> None:
    url = harness.entry.url
    small = _file_of(tmp_path / "small", 100 * 1024)
    big = _file_of(tmp_path / "big", 10 * MB)
    chunked = "Transfer-Encoding: chunked"
    # Once through each path first, so that what is measured is the body, not warming up.
    assert await _curl(url, small, _signature_of_now()) == 413
    assert await _curl(url, small, _signature_of_now(), chunked) == 413
    _reset_peak()
    before = _memory("VmRSS")

    declared = await _curl(url, big, _signature_of_now())  # Content-Length: 10 MB
    streamed = await _curl(url, big, _signature_of_now(), chunked)  # no length given

    grown = _memory("VmHWM") - before
    assert (declared, streamed) == (413, 413)
    assert grown < 5 * MB, f"resident memory grew by up to {grown / MB:.1f} MB"


async def _status_without_sending_the_body(url: str, headers: dict[str, str], length: int) -> bytes:
    """Sends only the request head, announcing a body that never comes; the status line."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        head = [f"POST {parts.path} HTTP/1.1", f"Host: {parts.netloc}", f"Content-Length: {length}"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        await writer.drain()
        # A gateway that waited for the body would still be waiting when this gives up.
        answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
        return answer.split(b"\r\n", 1)[0]
    finally:
        writer.close()


async def test_a_body_announced_over_the_limit_is_refused_before_it_arrives(
    harness: Harness,
) -> None:
    signature = sign(b"", SECRETS, int(time.time()))

    status = await _status_without_sending_the_body(
        harness.entry.url, {"Gateway-Signature": signature}, 10 * MB
    )

    assert status == b"HTTP/1.1 413 Request Entity Too Large"


@pytest.mark.parametrize(
    "signature",
    [None, "garbage", "t=1,v1=" + "0" * 64, "t=" + "9" * 2000, "v1=" + "a" * 64],
    ids=["missing", "garbage", "stale", "oversized", "no-timestamp"],
)
async def test_a_notification_without_a_valid_signature_header_gets_400(
    harness: Harness, signature: str | None
) -> None:
    body = notification_body("pay_unknown", "paid")
    headers = {"Content-Type": "application/json"}
    if signature is not None:
        headers["Gateway-Signature"] = signature

    answer = await harness.notifications.post(harness.entry.url, content=body, headers=headers)

    assert answer.status_code == 400
    assert answer.json()["code"] == "invalid_signature"


async def _paid_unheard(harness: Harness) -> tuple[str, bytes]:
    """A payment paid at the card gateway whose notification was dropped: its booking id,
    and the notification that tells of it."""
    payment = await harness.opened_payment()
    await harness.faults(drop_notifications=True)
    await harness.settle(payment.provider_payment_id)
    await harness.faults(drop_notifications=False)
    body = notification_body(payment.provider_payment_id, "paid", payment.payment_id)
    return payment.booking_id, body


async def _is_paid(harness: Harness, booking_id: str) -> bool:
    try:
        found = await harness.payment(booking_id)
    except grpc.aio.AioRpcError as error:
        if error.code() != grpc.StatusCode.UNAVAILABLE:  # the database is just back
            raise
        return False
    return found is not None and found.state == "paid"


async def test_a_notification_while_the_card_gateway_is_away_gets_503_and_is_applied_later(
    harness: Harness,
) -> None:
    booking_id, body = await _paid_unheard(harness)
    await harness.faults(fail_next_calls=1000)
    try:
        refused = await harness.notify_signed(body)
        assert (refused.status_code, refused.json()["code"]) == (503, "gateway_unavailable")
        left = (await harness.gateway.get("/_sandbox/faults")).json()["fail_next_calls"]

        async def retried_in_vain() -> bool:
            faults = (await harness.gateway.get("/_sandbox/faults")).json()
            return bool(faults["fail_next_calls"] <= left - OUTAGE_ROUNDS)

        await eventually(retried_in_vain)
        assert (await harness.payment(booking_id)).state == "pending"  # type: ignore[union-attr]
    finally:
        await harness.faults(fail_next_calls=0)

    # No notification comes again (the card gateway had its 503): the service remembered it.
    await eventually(lambda: _is_paid(harness, booking_id), SETTLED_WITHIN_S)


async def test_a_notification_while_the_database_is_away_gets_503_and_is_applied_later(
    harness: Harness,
) -> None:
    booking_id, body = await _paid_unheard(harness)
    await asyncio.to_thread(stop_postgres)
    try:
        refused = await harness.notify_signed(body)
    finally:
        await asyncio.to_thread(start_postgres)

    assert (refused.status_code, refused.json()["code"]) == (503, "unavailable")
    await eventually(lambda: _is_paid(harness, booking_id), SETTLED_WITHIN_S)
