"""A hostile or broken lock provider answer is an unknown outcome or a definite refusal,
never a crash in a job, and never a PIN in an error's text."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.access.adapters.lock_provider import (
    MAX_CODES,
    HttpLockProvider,
    ProviderRefused,
    ProviderUnavailable,
)

STARTS = datetime(2026, 12, 1, 17, tzinfo=UTC)
CODE = {
    "access_code_id": "ac_1",
    "device_id": "studio-a-door",
    "name": "liftfit-7d3c",
    "status": "set",
    "starts_at": "2026-12-01T17:00:00Z",
    "ends_at": "2026-12-01T18:00:00Z",
    "code": "482913",
}
Answer = Callable[[httpx.Request], httpx.Response]


def _provider(answer: Answer) -> HttpLockProvider:
    client = httpx.AsyncClient(
        base_url="http://lock.test", transport=httpx.MockTransport(answer), timeout=2.0
    )
    return HttpLockProvider(client)


def _json(status: int, document: Any) -> Answer:
    return lambda _: httpx.Response(status, content=json.dumps(document).encode())


def _raw(status: int, body: bytes) -> Answer:
    return lambda _: httpx.Response(status, content=body)


async def _create(answer: Answer) -> Any:
    return await _provider(answer).create_code(
        "studio-a-door", "liftfit-7d3c", STARTS, STARTS + timedelta(hours=1)
    )


async def test_a_well_formed_code_is_read_and_its_repr_hides_the_pin() -> None:
    code = await _create(_json(200, {"access_code": CODE}))
    assert (code.provider_code_id, code.status, code.pin) == ("ac_1", "set", "482913")
    assert code.starts_at == STARTS
    assert "482913" not in repr(code)


@pytest.mark.parametrize(
    "answer",
    [
        _raw(200, b"<html>maintenance</html>"),
        _raw(200, b""),
        _raw(200, b"\xff\xfe not utf-8"),
        _raw(200, b"[" * 100_000),
        _json(200, ["not", "an", "object"]),
        _json(200, {"access_code": "ac_1"}),
        _json(200, {"access_code": {**CODE, "code": "12ab"}}),
        _json(200, {"access_code": {**CODE, "code": 482913}}),
        _json(200, {"access_code": {**CODE, "starts_at": "tomorrow"}}),
        _json(200, {"access_code": {**CODE, "starts_at": "2026-12-01T17:00:00"}}),
        _json(200, {"access_code": {**CODE, "name": "n" * 5000}}),
        _json(200, {"access_code": {k: v for k, v in CODE.items() if k != "device_id"}}),
        _raw(503, b"unavailable"),
        _raw(302, b""),
    ],
)
async def test_a_malformed_answer_is_an_unknown_outcome(answer: Answer) -> None:
    with pytest.raises(ProviderUnavailable) as raised:
        await _create(answer)
    assert "482913" not in str(raised.value)


async def test_a_listing_that_is_not_a_list_or_is_longer_than_any_lock_holds_is_unknown() -> None:
    for found in ({"access_codes": {"a": CODE}}, {"access_codes": [CODE] * (MAX_CODES + 1)}):
        with pytest.raises(ProviderUnavailable):
            await _provider(_json(200, found)).list_codes("studio-a-door")


async def test_a_code_the_provider_no_longer_knows_is_gone_and_other_refusals_are_definite() -> (
    None
):
    gone = _json(404, {"error": "access_code_not_found"})
    assert await _provider(gone).get_code("ac_1") is None
    assert await _provider(gone).delete_code("ac_1") is None
    with pytest.raises(ProviderRefused) as refused:
        await _provider(_json(404, {"error": "device_not_found" * 100})).delete_code("ac_1")
    assert refused.value.status == 404 and len(refused.value.code) <= 256


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(
    status=st.sampled_from([200, 201, 400, 404, 409, 500]),
    code=st.dictionaries(st.sampled_from(sorted(CODE)), json_values, max_size=len(CODE)),
)
async def test_any_answer_is_a_code_an_unknown_outcome_or_a_refusal(
    status: int, code: dict[str, Any]
) -> None:
    answer = {"access_code": {**CODE, **code}, "error": code.get("name")}
    with contextlib.suppress(ProviderUnavailable, ProviderRefused):
        await _create(_json(status, answer))
