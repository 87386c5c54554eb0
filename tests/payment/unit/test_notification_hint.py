"""A notification names a gateway payment by a plain, bounded id, or it is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from services.payment.domain.errors import InvalidSignature
from services.payment.domain.notification import read_hint


def _body(payment_id: Any) -> bytes:
    return json.dumps({"id": "evt_1", "data": {"payment_id": payment_id}}).encode()


@pytest.mark.parametrize("payment_id", ["pay_1", "PAY-abc_09", "x" * 128])
def test_a_plain_payment_id_is_read(payment_id: str) -> None:
    assert read_hint(_body(payment_id)).provider_payment_id == payment_id


@pytest.mark.parametrize(
    "payment_id",
    ["", "x" * 129, "../v1/refunds", "pay 1", "pay_1\n", "pay%2F1", "päy", 17, None, ["pay_1"]],
)
def test_any_other_payment_id_is_refused(payment_id: Any) -> None:
    with pytest.raises(InvalidSignature):
        read_hint(_body(payment_id))


@pytest.mark.parametrize(
    "body", [b"[]", b'{"data": []}', b'{"data": "pay_1"}', b"null", b"[" * 100_000, b"\xff"]
)
def test_a_body_of_another_shape_is_refused(body: bytes) -> None:
    with pytest.raises(InvalidSignature):
        read_hint(body)
