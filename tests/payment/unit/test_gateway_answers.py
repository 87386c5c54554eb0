"""A hostile or broken provider answer is an unknown outcome, never a crash in a job."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from servicekit.provider_http import MAX_ANSWER
from services.payment.adapters.card_gateway import (
    GatewayRefused,
    GatewayUnavailable,
    HttpCardGateway,
)
from services.payment.domain.money import Money

PAYMENT = {
    "id": "pay_1",
    "reference": "3b0d4a8e-0000-4000-8000-000000000001",
    "state": "paid",
    "amount": 45000,
    "currency": "CZK",
    "checkout_url": "http://gateway.test/checkout/pay_1",
}


def _gateway(answer: Callable[[httpx.Request], httpx.Response]) -> HttpCardGateway:
    client = httpx.AsyncClient(
        base_url="http://gateway.test", transport=httpx.MockTransport(answer), timeout=2.0
    )
    return HttpCardGateway(client)


def _json(status: int, document: Any) -> Callable[[httpx.Request], httpx.Response]:
    return lambda _: httpx.Response(status, content=json.dumps(document).encode())


def _raw(status: int, body: bytes) -> Callable[[httpx.Request], httpx.Response]:
    return lambda _: httpx.Response(status, content=body)


async def test_a_well_formed_answer_is_read() -> None:
    remote = await _gateway(_json(200, PAYMENT)).get_payment("pay_1")
    assert (remote.provider_payment_id, remote.state, remote.amount) == (
        "pay_1",
        "paid",
        Money(45000, "CZK"),
    )


@pytest.mark.parametrize(
    "answer",
    [
        _raw(200, b"<html>maintenance</html>"),
        _raw(200, b""),
        _raw(200, b"\xff\xfe not utf-8"),
        _raw(200, b"[" * 100_000),  # nested beyond the parser's recursion limit
        _json(200, ["not", "an", "object"]),
        _json(200, {k: v for k, v in PAYMENT.items() if k != "amount"}),
        _json(200, {**PAYMENT, "amount": "45000"}),
        _json(200, {**PAYMENT, "amount": True}),
        _json(200, {**PAYMENT, "id": 17}),
        _json(200, {**PAYMENT, "state": None}),
        _json(200, {**PAYMENT, "currency": "C" * 5000}),
        _json(200, {**PAYMENT, "checkout_url": ["x"]}),
        _json(409, {"error": "not_cancellable", "payment": {"id": "pay_1"}}),
        _raw(409, b"conflict"),
        _raw(302, b""),
        _raw(502, b"bad gateway"),
    ],
)
async def test_a_malformed_answer_is_an_unknown_outcome(
    answer: Callable[[httpx.Request], httpx.Response],
) -> None:
    with pytest.raises(GatewayUnavailable):
        await _gateway(answer).cancel_payment("pay_1")


@pytest.mark.parametrize("listing", [{"data": "pay_1"}, {"data": [{"id": "pay_1"}]}, {}])
async def test_a_malformed_list_of_payments_is_an_unknown_outcome(listing: Any) -> None:
    with pytest.raises(GatewayUnavailable):
        await _gateway(_json(200, listing)).find_by_reference("ref")


async def test_a_refusal_without_a_payment_is_still_a_definite_refusal() -> None:
    with pytest.raises(GatewayRefused) as refused:
        await _gateway(_json(404, {"error": "not_found"})).get_payment("pay_1")
    assert (refused.value.status, refused.value.code, refused.value.remote) == (
        404,
        "not_found",
        None,
    )


async def test_an_endless_answer_is_cut_off_at_the_bound() -> None:
    read = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal read
        while True:
            read += 65536
            yield b" " * 65536

    gateway = _gateway(lambda _: httpx.Response(200, content=endless()))
    with pytest.raises(GatewayUnavailable):
        await gateway.get_payment("pay_1")
    assert read <= MAX_ANSWER + 2 * 65536


async def test_a_refund_answered_with_garbage_is_an_unknown_outcome() -> None:
    gateway = _gateway(_raw(201, b'{"id": "re_1", "state": '))
    with pytest.raises(GatewayUnavailable):
        await gateway.refund("pay_1", "refund-1", Money(45000, "CZK"))
