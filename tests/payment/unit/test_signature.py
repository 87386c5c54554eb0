"""Notification signatures: HMAC over "<t>.<body>", 300 s tolerance, rotation."""

from __future__ import annotations

import pytest

from services.payment.domain.errors import InvalidSignature
from services.payment.domain.notification import read_hint
from services.payment.domain.signature import sign, verify_signature

BODY = b'{"id":"evt_1","data":{"payment_id":"pay_1","state":"paid"}}'
NOW = 1_800_000_000


def test_a_signature_by_either_secret_of_a_rotation_verifies() -> None:
    for secret in ("old", "new"):
        verify_signature(sign(BODY, [secret], NOW), BODY, ["new", "old"], NOW)


@pytest.mark.parametrize(
    "header, body, now",
    [
        (sign(BODY, ["other"], NOW), BODY, NOW),  # unknown secret
        (sign(BODY, ["new"], NOW), BODY + b" ", NOW),  # altered body
        (sign(BODY, ["new"], NOW - 301), BODY, NOW),  # stale
        (sign(BODY, ["new"], NOW + 301), BODY, NOW),  # from the future
        ("v1=abc", BODY, NOW),  # no timestamp
        (f"t={NOW}", BODY, NOW),  # no signature
        ("", BODY, NOW),
    ],
)
def test_bad_stale_or_altered_signatures_are_refused(header: str, body: bytes, now: int) -> None:
    with pytest.raises(InvalidSignature):
        verify_signature(header, body, ["new", "old"], now)


def test_the_edge_of_the_tolerance_still_verifies() -> None:
    verify_signature(sign(BODY, ["new"], NOW - 300), BODY, ["new"], NOW)


def test_the_hint_names_only_the_gateway_payment() -> None:
    assert read_hint(BODY).provider_payment_id == "pay_1"
